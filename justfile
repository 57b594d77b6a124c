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

# Fuzz each target for a while (CI runs them briefly).
fuzz seconds="60":
    go test -run '^$' -fuzz FuzzParseBatch -fuzztime {{seconds}}s ./store/

# What CI runs, locally.
ci:
    bash .ci/run
