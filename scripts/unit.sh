#!/usr/bin/env bash
# make unit: the tests that need no service — the packages whose tests import none of the
# harnesses that start redis-server, DynamoDB Local, a browser or a whole stack (pkg/testservers and
# the suites built on it). No root, no network, no set-up; about a minute on 2 cores with a warm
# build cache. make test runs these again with everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
harness='github.com/queueshq/queues/pkg/(testservers|openapicheck|stacktest|engine/enginetest|meta/metatest)$|github.com/chromedp/'
# A package's test binary is the package, its internal tests and its external (_test) tests:
# it needs a service when any of them pulls a harness in, or is one.
pkgs=()
while read -r pkg; do pkgs+=("$pkg"); done < <(
  go list -test -f '{{if .ForTest}}{{.ForTest}} {{.ImportPath}} {{join .Deps " "}}{{end}}' ./... |
    awk -v h="$harness" '{ p=$1; seen[p]=1; for (i=2;i<=NF;i++) if ($i ~ h) bad[p]=1 }
      END { for (p in seen) if (!(p in bad) && p !~ h) print p }' | sort)
echo "== go test (${#pkgs[@]} packages that need no service)"
go test -count=1 -timeout 5m "$@" "${pkgs[@]}"
echo "== Go SDK (sdk/go, its own module: table tests against httptest servers)"
(cd sdk/go && go test -count=1 "$@" ./...)
