# Recipes for working on the service. `just --list` shows them.

# Run the server on 127.0.0.1:1234 (or $PORT) with the default store.
run *args:
    go run ./cmd/service serve {{args}}

# Run every test (the command CI runs).
test:
    go test ./...

# Regenerate the templ views (the generated files are committed).
generate:
    go tool templ generate

# Write the screenshots in docs/screenshots (list, session, an opened diff, a
# message, the tools, search, usage, a segment divider, images, a long Changes
# section; 1280 and 390 px, light and dark) from the Chromium tests.
screenshots:
    SERVICE_BROWSER_TESTS=required SERVICE_SCREENSHOTS={{justfile_directory()}}/docs/screenshots go test ./handlers/ -run 'TestBrowserLook/Screenshots|TestBrowserSegments/SampleCompactedMidTurn|TestBrowserImages/Screenshots|TestBrowserReview/MoreChanges' -count=1
    # the team server's (team-*.png) need PostgreSQL: SERVICE_TEST_POSTGRES, see the README
    if [ -n "${SERVICE_TEST_POSTGRES:-}" ]; then SERVICE_BROWSER_TESTS=required SERVICE_SCREENSHOTS={{justfile_directory()}}/docs/screenshots go test ./cmd/service/ -run 'TestTeamBrowserShare' -count=1; fi

# Run the black-box conformance suite of the HTTP contract.
conformance:
    ../shared/conformance/run.sh .

# Run the benchmarks recorded in docs/performance.md.
bench:
    go test -run '^$' -bench . -benchmem -count 6 ./store/ ./handlers/ | tee bench.txt
    go run golang.org/x/perf/cmd/benchstat@latest bench.txt

# Run the UI development server on :3000 (UI_PORT) against the core at
# SERVICE_CORE_URL; view edits are regenerated and the server restarted.
dev:
    go tool templ generate --watch --cmd="go run ./cmd/service dev"

# Fuzz one target for a while (CI runs each briefly), e.g. `just fuzz FuzzParseBatch ./store/`.
fuzz target package seconds="60":
    go test -run '^$' -fuzz '^{{target}}$' -fuzztime {{seconds}}s {{package}}

# Refresh the vendored htmx files (versions in static/vendor/README.md).
vendor:
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d)
    cd "$tmp" && npm pack htmx.org@2.0.11 htmx-ext-sse@2.2.4 >/dev/null
    for f in *.tgz; do mkdir "${f%.tgz}" && tar xzf "$f" -C "${f%.tgz}"; done
    cp htmx.org-2.0.11/package/dist/htmx.min.js {{justfile_directory()}}/static/vendor/htmx-2.0.11.min.js
    cp htmx-ext-sse-2.2.4/package/sse.js {{justfile_directory()}}/static/vendor/htmx-ext-sse-2.2.4.js
    cp htmx-ext-sse-2.2.4/package/LICENSE {{justfile_directory()}}/static/vendor/LICENSE-htmx-ext-sse

# What CI runs, locally.
ci:
    bash .ci/run

# Start a throwaway server and run the load command against it (docs/performance.md).
load *args:
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d)
    go build -o "$tmp/service" ./cmd/service
    HOME="$tmp" "$tmp/service" serve --port 4399 >"$tmp/serve.log" 2>&1 &
    pid=$!
    trap 'kill $pid; rm -rf "$tmp"' EXIT
    sleep 1
    HOME="$tmp" go run ./cmd/load --url http://127.0.0.1:4399 {{args}}

# Refresh the embedded model price table (pricing/prices.json) from the
# MIT-licensed @pydantic/genai-prices npm package.
prices version="0.1.8":
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d)
    cd "$tmp" && npm pack @pydantic/genai-prices@{{version}} >/dev/null && tar xzf *.tgz
    node {{justfile_directory()}}/pricing/extract.mjs "$tmp/package" {{version}} > {{justfile_directory()}}/pricing/prices.json
    cp "$tmp/package/LICENSE" {{justfile_directory()}}/pricing/LICENSE-genai-prices

# Compare token counts with @ccusage/codex 18 (offline) on the Codex samples
# (docs/performance.md, "Usage against ccusage").
ccusage-codex-compare samples="../shared/samples/codex":
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d)
    samples=$(realpath {{samples}})
    cd "$tmp" && npm install --no-audit --no-fund @ccusage/codex@18 >/dev/null
    go build -C {{justfile_directory()}} -o "$tmp/service" ./cmd/service
    mkdir -p codex/sessions/2026/01/01 && cp "$samples"/*.jsonl codex/sessions/2026/01/01/
    echo "ccusage: session input(with cached) cached output cost"
    CODEX_HOME="$tmp/codex" npx ccusage-codex session --offline --json | node -e 'const d=JSON.parse(require("fs").readFileSync(0));for(const s of d.sessions)console.log(s.sessionFile,s.inputTokens,s.cachedInputTokens,s.outputTokens,s.costUSD.toFixed(4))'
    echo "service: session input(with cached) cached output estimated_cost"
    for f in codex/sessions/2026/01/01/*.jsonl; do
        n=$(basename "$f" .jsonl); HOME="$tmp" ./service import codex "$f" --db "$tmp/$n.db" >/dev/null
        HOME="$tmp" ./service usage monthly --json --db "$tmp/$n.db" | node -e 'const t=JSON.parse(require("fs").readFileSync(0)).total;console.log(process.argv[1],t.tokens.input+t.tokens.cache_read,t.tokens.cache_read,t.tokens.output,(t.estimated_cost_usd??0).toFixed(4))' "$n"
    done

# Compare token counts with ccusage 18 (offline) on the Claude Code samples,
# one sample per project folder (docs/performance.md, "Usage against ccusage").
ccusage-compare samples="../shared/samples/claude-code":
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d)
    samples=$(realpath {{samples}})
    cd "$tmp" && npm install --no-audit --no-fund ccusage@18 >/dev/null
    go build -C {{justfile_directory()}} -o "$tmp/service" ./cmd/service
    for f in $(find "$samples" -name '*.jsonl' -not -path '*/subagents/*'); do
        n=$(basename "$f" .jsonl); mkdir -p "cfg/projects/p/$n"; cp "$f" "cfg/projects/p/$n/"
    done
    for d in $(find "$samples" -type d -name subagents); do
        n=$(basename "$(dirname "$d")"); mkdir -p "cfg/projects/p/$n-subagents/subagents"; cp "$d"/*.jsonl "cfg/projects/p/$n-subagents/subagents/"
    done
    echo "ccusage: session input output cache_create cache_read cost"
    CLAUDE_CONFIG_DIR="$tmp/cfg" npx ccusage session --offline --json | node -e 'const d=JSON.parse(require("fs").readFileSync(0));for(const s of d.sessions)console.log(s.sessionId,s.inputTokens,s.outputTokens,s.cacheCreationTokens,s.cacheReadTokens,s.totalCost.toFixed(4))'
    echo "service: session input output cache_create cache_read estimated_cost"
    for d in cfg/projects/p/*/; do
        n=$(basename "$d"); HOME="$tmp" ./service import claude-code "$d" --db "$tmp/$n.db" >/dev/null
        HOME="$tmp" ./service usage monthly --json --db "$tmp/$n.db" | node -e 'const t=JSON.parse(require("fs").readFileSync(0)).total;console.log(process.argv[1],t.tokens.input,t.tokens.output,t.tokens.cache_creation,t.tokens.cache_read,(t.estimated_cost_usd??0).toFixed(4))' "$n"
    done
