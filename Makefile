# The two commands of the README.
.PHONY: run test build faults

run:
	go run ./services/queues serve

test:
	bash scripts/test.sh

build:
	go build -o bin/queues ./services/queues

# The fault suite in full (tests/faults; make test runs its short form): several rounds of each
# fault under a heavier load, with every figure logged.
faults:
	QUEUES_FAULTS_FULL=1 go test -count=1 -v -timeout 30m ./tests/faults/
