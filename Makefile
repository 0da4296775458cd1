# The two commands of the README.
.PHONY: run test build

run:
	go run ./services/queues dev

test:
	bash scripts/test.sh

build:
	go build -o bin/queues ./services/queues
