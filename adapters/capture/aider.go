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

// AiderRepositories is Aider's Capture.Follow: Aider keeps no list of the
// repositories it ran in, so capture follows the folders of the chat
// histories the store has imported (`service import aider`), looked up
// again at each look for new roots, so a repository imported while capture
// runs is followed from then on.
func AiderRepositories(ctx context.Context, st *store.Store) func() []string {
	return func() []string {
		files, err := st.ImportedFiles(ctx, aider.Kind)
		if err != nil {
			return nil // looked up again at the next look
		}
		var dirs []string
		for stamp := range files {
			// A run's stamp is its history's path, "#" and the run's id.
			if i := strings.LastIndexByte(stamp, '#'); i > 0 {
				if d := filepath.Dir(stamp[:i]); !slices.Contains(dirs, d) {
					dirs = append(dirs, d)
				}
			}
		}
		slices.Sort(dirs)
		return dirs
	}
}
