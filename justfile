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
