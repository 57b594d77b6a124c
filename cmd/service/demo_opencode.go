package main

import (
	"time"

	"github.com/agentreview/service/store"
)

// opencodeDocs is an opencode session in build mode with a plan turn, a
// failed tool and the cost opencode reported.
func opencodeDocs(now time.Time) *store.Batch {
	d := newDemoSession("demo-opencode-5d2a", "opencode", "1.2.6", "/home/dev/src/static-site", now.Add(-8*time.Hour),
		&store.Metrics{CostUSD: 0.2184, APIRequests: 9, Tokens: store.Tokens{Input: 21877, Output: 3105, CacheRead: 160512}})
	d.prompt("plan", "The sitemap misses the pages under /blog. Find out why.")
	d.tool("glob", map[string]any{"input": map[string]any{"pattern": "src/**/sitemap*"}, "output": "src/build/sitemap.ts"})
	d.read("src/build/sitemap.ts", 1, 64)
	d.say("collectPages() skips folders whose name starts with an underscore or a dot, and /blog is built from _posts/ into blog/ after the sitemap runs.")
	d.prompt("build", "Build the sitemap after the blog, then.")
	d.edit("src/build/index.ts", "await sitemap(out)\nawait blog(out)\n", "await blog(out)\nawait sitemap(out)\n")
	d.tool("webfetch", map[string]any{"input": map[string]any{"url": "https://www.sitemaps.org/protocol.html"}, "error": "fetch failed: getaddrinfo ENOTFOUND"})
	d.b.Steps[len(d.b.Steps)-1].Outcome = "failed"
	d.b.Steps[len(d.b.Steps)-1].Error = &store.StepError{Type: "tool_error", Message: "fetch failed: getaddrinfo ENOTFOUND www.sitemaps.org"}
	d.run("npm run build && grep -c '<loc>' dist/sitemap.xml", "built 212 pages\n212\n", 0)
	d.say("The sitemap now lists all 212 pages, the 41 blog posts included.")
	d.b.Session.EndedAt = d.tick(10)
	return d.b
}
