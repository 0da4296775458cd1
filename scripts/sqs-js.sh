#!/usr/bin/env bash
# Drives the SQS door with the AWS SDK for JavaScript v3 (@aws-sdk/client-sqs, pinned, from
# the npm registry into the cache folder) against a `queues serve` it starts on a free port.
# Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${QUEUES_CACHE_DIR:-$HOME/.cache/queues}/sqs-js"
if [ ! -d "$cache/node_modules/@aws-sdk/client-sqs" ]; then
  mkdir -p "$cache"
  (cd "$cache" && npm install --no-audit --no-fund --silent @aws-sdk/client-sqs@3.1169.0)
fi
dir=$(mktemp -d)
pid=""
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$dir"; }
trap stop EXIT
go build -o "$dir/queues" ./services/queues
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
"$dir/queues" serve -listen "127.0.0.1:$port" -data-dir "$dir/data" -operator-token js-operator -log-level error >/dev/null &
pid=$!
for _ in $(seq 100); do curl -sf "$url/healthz" >/dev/null && break; sleep 0.1; done
prj=$(curl -sf "$url/v1/projects" -H 'Authorization: Bearer js-operator' -H 'content-type: application/json' -d '{"name":"js"}')
tok=$(curl -sf "$url/v1/projects/$(echo "$prj" | jq -r .id)/tokens" -H 'Authorization: Bearer js-operator' -H 'content-type: application/json' -d '{"name":"js","scopes":["*"]}')
cp tests/sqsjs/flow.mjs "$cache/flow.mjs"
SQS_ENDPOINT="$url" PROJECT=$(echo "$prj" | jq -r .slug) AWS_ACCESS_KEY_ID=$(echo "$tok" | jq -r .slug) \
  AWS_SECRET_ACCESS_KEY=$(echo "$tok" | jq -r .sqsSecretAccessKey) AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
  node "$cache/flow.mjs"
