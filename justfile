# Recipes for working on git-agentmine. `just --list` shows them.

# Run the whole test suite (what CI runs).
test:
    go test -timeout 60m ./...

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

# Run the scale benchmarks at 10,000 and 100,000 tasks (fixtures built with
# git fast-import, several minutes on two cores): each prints its ratio to
# raw git doing the same reads, the git processes each side starts and both
# peak memories. Not part of `bench`: the 100k fixtures alone take minutes.
bench-scale pick="100k|10k|Status":
    AGENTMINE_BENCH_SCALE=1 go test -run '^$' -bench '{{pick}}' -benchtime 3x -timeout 60m ./cmd/git-agentmine

# Run the benchmarks behind the goals table of README's Scale section (how
# each is measured: docs/scale.md) and print one row each: goal, ratio to
# raw git, git processes, peak memory and the load average. pick selects
# rows by label (grep -E); the 100,000-task rows take minutes;
# `scripts/bench-table -w` also writes the table into README.
bench-table pick=".":
    scripts/bench-table '{{pick}}'

# Run `run` against plain `worker run --exec` loops side by side (N = 1, 2,
# 4, 8; no-op workers), and the latency from a worker's end to the loop.
bench-run tasks="10":
    AGENTMINE_BENCH_WAKE_TASKS={{tasks}} go test -run '^$' -bench 'RunOverhead$' -benchtime 1x -timeout 60m ./cmd/git-agentmine
    go test -run '^$' -bench 'Wake$' -benchtime 200x ./pipeline

# Run 20 scripted workers that edit overlapping files with `run --parallel 4
# --merge`, blind and with declared paths: prints the merge conflicts,
# retries and wall time of each side, and the load average.
bench-paths tasks="20" pairs="1":
    AGENTMINE_BENCH_PATHS=1 AGENTMINE_BENCH_PATHS_TASKS={{tasks}} AGENTMINE_BENCH_PATHS_PAIRS={{pairs}} go test -run '^$' -bench 'RunPaths$' -benchtime 1x -timeout 60m -v ./cmd/git-agentmine

# Run a fleet: N clones (default 32), each its own repository, racing
# through one remote served by `git daemon` and by smart HTTP, each running
# `run --parallel 2` of no-op workers over a shared board of `tasks` tasks;
# checks that every task ran exactly once and every clone converged, and
# prints seconds per task, sync rounds per claim, retries and the remote's
# receive-pack and upload-pack time. Pick one transport with
# transport=http or transport=daemon. Many minutes on two cores.
bench-fleet clones="32" tasks="200" transport="":
    AGENTMINE_BENCH_FLEET=1 AGENTMINE_BENCH_FLEET_CLONES={{clones}} AGENTMINE_BENCH_FLEET_TASKS={{tasks}} AGENTMINE_BENCH_FLEET_TRANSPORT={{transport}} go test -run '^$' -bench 'Fleet$' -benchtime 1x -timeout 180m -v ./cmd/git-agentmine

# Run `sync` pulling 1,500 changed entities of 10,000 against raw git
# fetching and pushing the same refs, and the sync that also merges and
# pushes (BenchmarkSync10k); each prints its ratio and git processes.
bench-sync:
    go test -run '^$' -bench 'Sync(Pull)?10k$' -benchtime 3x -timeout 60m ./replica

# Measure acknowledged writes lost beside a `git gc` loop: 16 processes of
# 20 `task add` against plain git doing the same writes (hash-object,
# mktree, commit-tree, update-ref), under `gc --prune=now` and default gc.
prune-race:
    AGENTMINE_PRUNE_RACE=1 go test -v -count=1 -run 'TestPruneRaceNumbers$' -timeout 30m ./cmd/git-agentmine | grep -v '^[=-]'

# Static checks.
lint:
    gofmt -l . | tee /dev/stderr | (! read)
    go vet ./...

# Install git-agentmine and agentmine-serve (which runs serve and mcp)
# into GOBIN (or GOPATH/bin), so `git agentmine` works, and the man page
# beside them (../share/man/man1), so `git agentmine --help` does.
install:
    go install ./cmd/...
    "$(go env GOBIN | grep . || echo "$(go env GOPATH)/bin")/git-agentmine" install-man

# Run the demo: the whole worker lifecycle in a throwaway repository.
demo:
    go run ./cmd/git-agentmine demo
