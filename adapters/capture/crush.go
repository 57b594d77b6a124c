package capture

import (
	"context"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/crush"
)

// crushWatcher follows the data dirs of Crush's projects: each holds
// crush.db, with every session of that project.
var crushWatcher = watcher{agent: crush.Agent, file: crushFile, sync: (*Capture).syncCrush}

// crushFile reports whether a changed file is Crush's database or its
// write-ahead log (a commit may stay in the log until a checkpoint).
func crushFile(path string) bool {
	_, ok := crush.IsDatabase(path)
	return ok
}

// syncCrush brings up to date the Crush sessions of a changed database (or,
// for a scan, of the databases under a root), through the import runner:
// it reads again only the sessions whose rows changed (their stamps), each
// in one short read transaction.
func (c *Capture) syncCrush(ctx context.Context, path string, final bool) result {
	if db, ok := crush.IsDatabase(path); ok {
		path = db
	}
	im := &adapters.Importer{Store: c.Store}
	return imported(im.Run(ctx, crush.Agent, []string{path}))
}
