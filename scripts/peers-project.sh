#!/usr/bin/env bash
# Measures Queues with `queues bench` (scripts/bench.sh: a fresh stack per mode) and prints one
# line per figure, "RESULT<TAB>peer<TAB>metric<TAB>value<TAB>unit", the line format of the peer
# benchmark harness docs/performance.md runs beside NATS JetStream: given to that harness as the
# command it runs every round, the figures land in the same run as the peers', so each round's
# ratio says how Queues did beside them on the same machine at the same moment.
#
#   scripts/peers-project.sh                  # every mode, N=50000
#   MODES="api fifo" N=20000 scripts/peers-project.sh
#   BENCH_FLAGS=-raw scripts/peers-project.sh  # extra `queues bench` flags (here: the raw client)
#
# Modes (peer names in brackets): api [project] — `queues api` on its own redis-server;
# serve [project-serve] — `queues serve`; fifo [project-fifo] — `queues api`, a fifo queue
# with 64 groups; stream [project-stream] — `queues api`, consumers on receive streams; push
# [project-push] — `queues serve` pushing to a local receiver that answers 204.
# Workload: 64-byte bodies, batches of 10, 16 requests in flight, N messages per phase,
# through the Go SDK (`queues bench`'s default). Besides the rates and p99s, each timed phase
# prints every process's CPU per message as <phase>_cpu_<process>_us_per_msg (process: bench,
# the generator; api, redis, dynamodb, pusher; serve), unit us/msg, and their sum as
# <phase>_cpu_total_us_per_msg.
set -uo pipefail
cd "$(dirname "$0")/.."
N=${N:-50000}
MODES=${MODES:-"api serve fifo stream push"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

emit() { # peer report.json
  python3 - "$1" "$2" <<'EOF'
import json, sys
peer, path = sys.argv[1], sys.argv[2]
try:
    rep = json.load(open(path))
except Exception as e:
    print(f"# {peer}: no report ({e})", file=sys.stderr)
    sys.exit(0)
for p in rep.get("phases", []):
    ph = p["phase"]
    if not p.get("complete", False):
        print(f"# {peer} {ph} cut short", file=sys.stderr)
    out = []
    if ph in ("produce", "consume", "push"):
        out.append((f"{ph}_msgs_s", p["msgsPerSec"], "msg/s"))
    if ph == "consume":
        out.append(("consume_c16_msgs_s", p["msgsPerSec"], "msg/s"))
    if ph == "e2e":
        out.append(("e2e_c16_msgs_s", p["msgsPerSec"], "msg/s"))
    if ph in ("e2e", "push"):
        if p.get("endToEnd"):
            out.append((f"{ph}_latency_p99_ms", p["endToEnd"]["p99Ms"], "ms"))
        out += [(f"{ph}_lost", p.get("lost", -1), "msgs"), (f"{ph}_dup", p.get("duplicates", 0), "msgs")]
    if ph == "wakeup" and p.get("endToEnd"):
        out.append(("wakeup_p99_ms", p["endToEnd"]["p99Ms"], "ms"))
    if ph in ("produce", "consume", "e2e") and p["latency"]["count"] > 0:
        # (none for consume through the SDK's stream consumers: they make no requests)
        out.append((f"{ph}_request_p99_ms", p["latency"]["p99Ms"], "ms"))
    cpu = [c for c in p.get("cpu") or [] if not c.get("error")]
    for c in cpu:
        out.append((f"{ph}_cpu_{c['name'].replace('-', '_')}_us_per_msg", round(c["usPerMsg"], 2), "us/msg"))
    if cpu:
        out.append((f"{ph}_cpu_total_us_per_msg", round(sum(c["usPerMsg"] for c in cpu), 2), "us/msg"))
    for m, v, u in out:
        print(f"RESULT\t{peer}\t{m}\t{v}\t{u}")
EOF
}

run() { # peer bench.sh-args…
  local peer=$1; shift
  local out="$work/$peer.json"
  # BENCH_FLAGS: extra flags for every mode's `queues bench` (word-split on purpose).
  # shellcheck disable=SC2086
  if ! bash scripts/bench.sh "$@" ${BENCH_FLAGS:-} -quiet -json -size 64 -batch 10 -inflight 16 -count "$N" >"$out" 2>"$out.err"; then
    echo "# $peer failed:" >&2; tail -5 "$out.err" >&2
  fi
  emit "$peer" "$out"
}

for mode in $MODES; do
  case $mode in
  api) run project -phases produce,consume,e2e,wakeup ;;
  serve) run project-serve serve -phases produce,consume,e2e,wakeup ;;
  fifo) run project-fifo -type fifo -groups 64 -phases produce,consume,e2e ;;
  stream) run project-stream -raw -stream -phases produce,consume,e2e ;;
  push) QUEUES_PUSH_ALLOW_PRIVATE=true run project-push serve -phases push ;;
  *) echo "unknown mode $mode" >&2 ;;
  esac
done
