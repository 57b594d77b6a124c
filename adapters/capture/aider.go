package capture

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentreview/service/adapters/aider"
	"github.com/agentreview/service/store"
)

// aiderWatcher follows Aider's chat histories at the top of the
// repositories it ran in, which it appends to as it runs; a new run in a
// history is a new session.
var aiderWatcher = watcher{agent: aider.Agent, file: aiderFile, top: true}

func aiderFile(path string) bool { return aider.IsHistoryName(filepath.Base(path)) }

// maxAiderWorkspaces bounds the workspaces of other agents' sessions
// AiderRepositories gives: each is a folder watched.
const maxAiderWorkspaces = 256

// AiderRepositories is Aider's Capture.Follow: Aider keeps no list of the
// repositories it ran in, so capture follows the folders of the chat
// histories the store has imported (`service import aider`) and the
// workspaces of the stored sessions of any agent, the latest
// maxAiderWorkspaces (Aider writes its history at the top of the
// repository it runs in, where other agents run too), looked up again at
// each look for new roots once the store has changed since the last, so
// a repository imported or worked in while capture runs is followed from
// then on.
func AiderRepositories(ctx context.Context, st *store.Store) func() []string {
	seen, dirs := int64(-1), []string(nil)
	return func() []string {
		stamp, err := st.LatestStamp(ctx)
		if err != nil || stamp == seen {
			return dirs // looked up again at the next look
		}
		files, err := st.ImportedFiles(ctx, aider.Kind)
		if err != nil {
			return dirs
		}
		workspaces, err := st.WorkspaceRoots(ctx, maxAiderWorkspaces)
		if err != nil {
			return dirs
		}
		var found []string
		for path := range files {
			// A run's stamp is its history's path, "#" and the run's id.
			if i := strings.LastIndexByte(path, '#'); i > 0 {
				found = append(found, filepath.Dir(path[:i]))
			}
		}
		for _, w := range workspaces {
			if filepath.IsAbs(w) {
				found = append(found, filepath.Clean(w))
			}
		}
		slices.Sort(found)
		seen, dirs = stamp, slices.Compact(found)
		return dirs
	}
}
