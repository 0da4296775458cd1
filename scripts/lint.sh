#!/usr/bin/env bash
# make lint: every static check make test runs — gofmt, go vet, staticcheck and golangci-lint
# (pinned, installed into the cache folder on first use), the repository checks (tests/repo:
# links, sizes, documented configuration) and the OpenAPI linter (npm).
set -euo pipefail
cd "$(dirname "$0")/.."
QUEUES_CACHE_DIR="${QUEUES_CACHE_DIR:-$HOME/.cache/queues}"
GOBIN_DIR="$QUEUES_CACHE_DIR/bin"
mkdir -p "$GOBIN_DIR"
if [ ! -x "$GOBIN_DIR/staticcheck" ]; then
  echo "== installing staticcheck"
  GOBIN="$GOBIN_DIR" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
GOLANGCI_VERSION=v2.15.0
if ! "$GOBIN_DIR/golangci-lint" version 2>/dev/null | grep -q "${GOLANGCI_VERSION#v}"; then
  echo "== installing golangci-lint $GOLANGCI_VERSION"
  GOBIN="$GOBIN_DIR" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_VERSION"
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then echo "not gofmt-formatted:"; echo "$unformatted"; exit 1; fi

echo "== go vet"
go vet ./...
# The query-protocol SDK tests are a module of their own (tests/sqs runs them on both backends).
(cd tests/sqslegacy && go vet ./...)
# The Go SDK is a module of its own (sdk/go): scripts/sdk-go-check.sh vets and tests it.

echo "== staticcheck"
"$GOBIN_DIR/staticcheck" ./...
(cd sdk/go && "$GOBIN_DIR/staticcheck" ./...)

echo "== golangci-lint (.golangci.yml)"
"$GOBIN_DIR/golangci-lint" run ./...
(cd sdk/go && "$GOBIN_DIR/golangci-lint" run ./...)

echo "== repository checks (tests/repo: doc links resolve inside the repository; file and function sizes)"
go test -count=1 ./tests/repo/

echo "== openapi lint"
bash scripts/lint-openapi.sh

