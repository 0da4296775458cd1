#!/usr/bin/env bash
# make race: the race detector over the packages whose concurrency matters (they start their
# own redis-server through pkg/testservers, as make test does).
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -race -timeout 10m "$@" ./pkg/metacache/ ./pkg/api/ ./pkg/ratelimit/ ./pusher/ ./pkg/engine/embeddedengine/ ./pkg/bench/ ./pkg/fanout/ ./pkg/tenancy/
