# The two commands of the README.
.PHONY: run test build

run:
	go run ./services/queues serve

test:
	bash scripts/test.sh

build:
	go build -o bin/queues ./services/queues
