# The two commands of the README (run, test), and a few more. `make help` lists them: each
# target's help is the `##` comment on its line.
.PHONY: help run test lint unit race build faults soak fuzz-long move100k neighbours

help: ## list the targets
	@awk -F':.*## ' '/^[a-z-]+:.*## /{printf "  make %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## everything in one process on the embedded store (go run ./services/queues serve)
	go run ./services/queues serve

test: ## every check CI runs (bash scripts/test.sh; installs what it needs)
	bash scripts/test.sh

lint: ## the static checks of make test: gofmt, vet, staticcheck, golangci-lint, tests/repo, OpenAPI lint (bash scripts/lint.sh)
	bash scripts/lint.sh

unit: ## the tests that need no service (no Redis, DynamoDB, browser or root), about a minute (bash scripts/unit.sh)
	bash scripts/unit.sh

race: ## the race detector over the concurrency-sensitive packages (bash scripts/race.sh; starts its own redis-server)
	bash scripts/race.sh

build: ## the binary, at bin/queues
	go build -o bin/queues ./services/queues

# The fault suite in full (tests/faults; make test runs its short form): several rounds of each
# fault under a heavier load, with every figure logged.
faults: ## the fault suite in full: several rounds of each fault under a heavier load
	QUEUES_FAULTS_FULL=1 go test -count=1 -v -timeout 60m ./tests/faults/

# The soak (F20): the whole service under a mixed load (standard, fifo, push, long polls) with a
# fault drawn from the suite's list every QUEUES_SOAK_EVERY (30 s) for QUEUES_SOAK_DURATION
# (10 minutes), then a drain and the checker's report.
QUEUES_SOAK_DURATION ?= 10m
QUEUES_SOAK_EVERY ?= 30s
soak: ## the F20 soak: 10 minutes of mixed load with a fault every 30 s (QUEUES_SOAK_DURATION, QUEUES_SOAK_EVERY)
	QUEUES_SOAK_DURATION=$(QUEUES_SOAK_DURATION) QUEUES_SOAK_EVERY=$(QUEUES_SOAK_EVERY) \
		go test -count=1 -v -run '^TestF20Soak$$' -timeout 3h ./tests/faults/

# Every fuzz target for FUZZTIME (default 10m) each, one after another (docs/security.md).
fuzz-long: ## every fuzz target for FUZZTIME (default 10m) each, one at a time (FUZZ_ONLY=regexp)
	bash scripts/fuzz-long.sh

# The move-task rate test at full size (docs/redrive.md): 100,000 messages moved back from a
# dead-letter queue at 5,000/s while consumers drain the source, on the production stack.
move100k: ## 100,000 messages moved back from a dead-letter queue at 5,000/s (docs/redrive.md)
	QUEUES_E2E_BACKEND=stack QUEUES_MOVE_N=100000 go test -count=1 -v -timeout 30m -run TestMoveBackWhileDraining ./tests/e2e/

# The noisy-neighbour measurement of docs/measurements/tenancy-neighbours.md at length: project B alone for
# NEIGHBOUR_WINDOW, then beside a project A at its limits for as long, on `queues serve`
# (NEIGHBOUR_ON=api: one `queues api` and a `queues pusher` on Redis and DynamoDB Local);
# scripts/bench.sh starts and stops it. A's load runs in a process of its own, and the
# scheduler puts the service ahead of both clients (SERVICE_NICE, needs root; A's process at
# nice NEIGHBOUR_A_NICE): on a real service neither client runs on the service's CPUs.
# NEIGHBOUR_SERVICE_NICE= NEIGHBOUR_A_NICE=0 measures everything sharing the CPUs alike.
NEIGHBOUR_WINDOW ?= 60s
NEIGHBOUR_ON ?= serve
NEIGHBOUR_SERVICE_NICE ?= -10
NEIGHBOUR_A_NICE ?= 19
neighbours: ## B alone, then beside a project A at its limits, NEIGHBOUR_WINDOW (60s) each, on NEIGHBOUR_ON (serve|api) (docs/measurements/tenancy-neighbours.md)
	SERVICE_NICE=$(NEIGHBOUR_SERVICE_NICE) bash scripts/bench.sh $(filter serve,$(NEIGHBOUR_ON)) -phases neighbour -neighbour-window $(NEIGHBOUR_WINDOW) -neighbour-settle 5s -neighbour-a-nice $(NEIGHBOUR_A_NICE)
