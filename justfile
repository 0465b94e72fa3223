# Recipes for working on git-agentmine. `just --list` shows them.

# Run the whole test suite (what CI runs).
test:
    go test ./...

# Run the fast subset for the edit loop: skips the slow tests (multi-process
# races, large fixtures, the long worker scenarios); `test` runs them all.
test-short:
    go test -short ./...

# Run the benchmarks that compare agentmine with raw git in the same run.
bench:
    go test -run '^$' -bench . -benchtime 5x ./...

# Static checks.
lint:
    gofmt -l . | tee /dev/stderr | (! read)
    go vet ./...

# Install git-agentmine into GOBIN (or GOPATH/bin), so `git agentmine` works.
install:
    go install ./cmd/git-agentmine
    install -D -m 0644 docs/git-agentmine.1 "${MANDIR:-$HOME/.local/share/man}/man1/git-agentmine.1"

# Run the demo: the whole worker lifecycle in a throwaway repository.
demo:
    go run ./cmd/git-agentmine demo
