package capture

import (
	"context"
	"slices"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/opencode"
)

// opencodeFile reports whether a changed file may hold opencode sessions:
// its database or write-ahead log (1.2 and later; a commit may stay in the
// log until a checkpoint), or a JSON file of its 1.1 storage.
func opencodeFile(path string) bool {
	_, db := opencode.IsDatabase(path)
	_, json := opencode.IsStorageFile(path)
	return db || json
}

// syncOpencode brings up to date the opencode sessions a changed file (or,
// for a scan, a root folder) holds. In a database only the sessions with a
// row updated since the last read are read again, each in one short read
// transaction; the first read of a database reads those of its sessions
// whose files changed since the last import. A storage file's whole
// storage folder goes through the import runner, which skips the sessions
// whose files are unchanged. A half-written JSON file is read again
// shortly after, and only the final try reports it.
func (c *Capture) syncOpencode(ctx context.Context, path string, final bool) result {
	im := &adapters.Importer{Store: c.Store}
	agent := opencode.Agent
	if db, ok := opencode.IsDatabase(path); ok {
		since, seen := c.opencodeSince[db]
		ids, newest, err := opencode.Changed(db, since)
		if err != nil {
			return result{err: err}
		}
		if seen {
			im.Rescan = true // the file changed; only these sessions did
			discover := agent.Discover
			agent.Discover = func(roots []string) ([]adapters.Unit, []adapters.Problem) {
				units, problems := discover(roots)
				return slices.DeleteFunc(units, func(u adapters.Unit) bool { return !slices.Contains(ids, u.ID) }), problems
			}
		}
		res := imported(im.Run(ctx, agent, []string{db}))
		if res.err == nil && len(res.problems) == 0 {
			c.opencodeSince[db] = newest
		}
		return res
	}
	if storage, ok := opencode.IsStorageFile(path); ok {
		if !final && !wholeJSON(path) {
			return result{unsettled: true}
		}
		path = storage
	}
	return imported(im.Run(ctx, agent, []string{path}))
}
