package capture

import (
	"context"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/opencode"
)

// opencodeWatcher follows opencode's data folder: its database (1.2 and
// later), which holds every session, and its 1.1 storage files.
var opencodeWatcher = watcher{agent: opencode.Agent, file: opencodeFile, sync: (*Capture).syncOpencode}

// opencodeFile reports whether a changed file may hold opencode sessions:
// its database or write-ahead log (1.2 and later; a commit may stay in the
// log until a checkpoint), or a JSON file of its 1.1 storage.
func opencodeFile(path string) bool {
	_, db := opencode.IsDatabase(path)
	_, json := opencode.IsStorageFile(path)
	return db || json
}

// syncOpencode brings up to date the opencode sessions a changed file (or,
// for a scan, a root folder) holds, through the import runner: in a
// database it reads again only the sessions with a row updated or added
// (their stamps), each in one short read transaction; in a storage folder
// those whose files changed. A half-written JSON file is read again
// shortly after, and only the final try reports it.
func (c *Capture) syncOpencode(ctx context.Context, path string, final bool) result {
	if db, ok := opencode.IsDatabase(path); ok {
		path = db
	} else if storage, ok := opencode.IsStorageFile(path); ok {
		if !final && !wholeJSON(path) {
			return result{unsettled: true}
		}
		path = storage
	}
	im := &adapters.Importer{Store: c.Store}
	return imported(im.Run(ctx, opencode.Agent, []string{path}))
}
