# Recipes for working on git-agentmine. `just --list` shows them.

# Run the whole test suite (what CI runs).
test:
    go test ./...

# Run the fast subset for the edit loop: skips the slow tests (multi-process
# races, large fixtures, the long worker scenarios); `test` runs them all.
test-short:
    go test -short ./...

# Run every fuzz target for a while, one after the other (CI runs 5s each;
# the long runs are 5m). Set FUZZFLAGS="-parallel 1" on a shared machine.
fuzz time="10s" pick=".":
    .ci/fuzz {{time}} {{pick}}

# Run the benchmarks that compare agentmine with raw git in the same run.
bench:
    go test -run '^$' -bench . -benchtime 5x ./...

# Static checks.
lint:
    gofmt -l . | tee /dev/stderr | (! read)
    go vet ./...

# Install git-agentmine into GOBIN (or GOPATH/bin), so `git agentmine` works,
# and its man page beside it (../share/man/man1), so `git agentmine --help` does.
install:
    go install ./cmd/git-agentmine
    "$(go env GOBIN | grep . || echo "$(go env GOPATH)/bin")/git-agentmine" install-man

# Run the demo: the whole worker lifecycle in a throwaway repository.
demo:
    go run ./cmd/git-agentmine demo
