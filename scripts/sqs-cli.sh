#!/usr/bin/env bash
# Drives the SQS door with the AWS CLI (Debian's awscli package; its botocore speaks SQS's
# query protocol and checks the MD5s of bodies and message attributes itself) against a
# `queues serve` it starts on a free port. Run by scripts/test.sh; skipped without `aws`.
set -euo pipefail
cd "$(dirname "$0")/.."
AWS=$(command -v /usr/bin/aws || command -v aws || true)
if [ -z "$AWS" ]; then echo "sqs-cli: no aws command; skipped"; exit 0; fi

dir=$(mktemp -d)
pid=""
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$dir"; }
trap stop EXIT
go build -o "$dir/queues" ./services/queues
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
"$dir/queues" serve -listen "127.0.0.1:$port" -data-dir "$dir/data" -operator-token cli-operator -log-level error >/dev/null &
pid=$!
for _ in $(seq 100); do curl -sf "$url/healthz" >/dev/null && break; sleep 0.1; done

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
prj=$(curl -sf "$url/v1/projects" -H 'Authorization: Bearer cli-operator' -H 'content-type: application/json' -d '{"name":"cli"}')
pid_=$(echo "$prj" | json 'd["id"]'); slug=$(echo "$prj" | json 'd["slug"]')
tok=$(curl -sf "$url/v1/projects/$pid_/tokens" -H 'Authorization: Bearer cli-operator' -H 'content-type: application/json' -d '{"name":"cli","scopes":["*"]}')
export AWS_ACCESS_KEY_ID=$(echo "$tok" | json 'd["slug"]')
export AWS_SECRET_ACCESS_KEY=$(echo "$tok" | json 'd["sqsSecretAccessKey"]')
export AWS_DEFAULT_REGION=eu-central-1 AWS_PAGER="" AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
sqs() { "$AWS" --endpoint-url "$url" --output json sqs "$@"; }
fail() { echo "sqs-cli: $*" >&2; exit 1; }

q=$(sqs create-queue --queue-name cli --attributes VisibilityTimeout=40 | json 'd["QueueUrl"]')
[ "$q" = "$url/sqs/$slug/cli" ] || fail "QueueUrl $q"
[ "$(sqs get-queue-url --queue-name cli | json 'd["QueueUrl"]')" = "$q" ] || fail "get-queue-url"
sqs list-queues --queue-name-prefix cl | json 'd["QueueUrls"]' | grep -q "$q" || fail "list-queues"
sqs set-queue-attributes --queue-url "$q" --attributes DelaySeconds=0,MessageRetentionPeriod=600
[ "$(sqs get-queue-attributes --queue-url "$q" --attribute-names All | json 'd["Attributes"]["VisibilityTimeout"]')" = 40 ] || fail "attributes"
sqs tag-queue --queue-url "$q" --tags team=cli,env=test
sqs untag-queue --queue-url "$q" --tag-keys env
[ "$(sqs list-queue-tags --queue-url "$q" | json 'd["Tags"]')" = "{'team': 'cli'}" ] || fail "tags"

sqs send-message --queue-url "$q" --message-body 'hello <cli> & more' \
  --message-attributes '{"s":{"DataType":"String","StringValue":"x"},"n":{"DataType":"Number","StringValue":"42"},"b":{"DataType":"Binary","BinaryValue":"AAEC"}}' >/dev/null
sqs send-message-batch --queue-url "$q" --entries Id=a,MessageBody=one Id=b,MessageBody=two | json 'len(d["Successful"])' | grep -qx 2 || fail "send-message-batch"
r=$(sqs receive-message --queue-url "$q" --max-number-of-messages 10 --attribute-names All --message-attribute-names All)
[ "$(echo "$r" | json 'len(d["Messages"])')" = 3 ] || fail "receive-message: $r"
h=$(echo "$r" | json '[m for m in d["Messages"] if m["Body"].startswith("hello")][0]["ReceiptHandle"]')
[ "$(echo "$r" | json '[m for m in d["Messages"] if m["Body"].startswith("hello")][0]["MessageAttributes"]["n"]["DataType"]')" = Number ] || fail "attribute types"
sqs change-message-visibility --queue-url "$q" --receipt-handle "$h" --visibility-timeout 0
sqs delete-message --queue-url "$q" --receipt-handle "$h"   # stale after the release: succeeds, as on SQS
entries=$(echo "$r" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps([{"Id":str(i),"ReceiptHandle":m["ReceiptHandle"]} for i,m in enumerate(d["Messages"]) if not m["Body"].startswith("hello")]))')
sqs change-message-visibility-batch --queue-url "$q" --entries "$(echo "$entries" | python3 -c 'import json,sys; print(json.dumps([dict(e, VisibilityTimeout=30) for e in json.load(sys.stdin)]))')" | json 'len(d["Successful"])' | grep -qx 2 || fail "change-message-visibility-batch"
sqs delete-message-batch --queue-url "$q" --entries "$entries" | json 'len(d["Successful"])' | grep -qx 2 || fail "delete-message-batch"
sqs purge-queue --queue-url "$q"

f=$(sqs create-queue --queue-name cli.fifo --attributes FifoQueue=true,ContentBasedDeduplication=true | json 'd["QueueUrl"]')
sqs send-message --queue-url "$f" --message-body first --message-group-id g >/dev/null
r=$(sqs receive-message --queue-url "$f" --attribute-names MessageGroupId SequenceNumber)
[ "$(echo "$r" | json 'd["Messages"][0]["Attributes"]["MessageGroupId"]')" = g ] || fail "fifo receive: $r"
dlq=$(sqs get-queue-attributes --queue-url "$q" --attribute-names QueueArn | json 'd["Attributes"]["QueueArn"]')
[ "$dlq" = "arn:aws:sqs:eu-central-1:$slug:cli" ] || fail "QueueArn $dlq"
sqs delete-queue --queue-url "$f"
sqs delete-queue --queue-url "$q"
if sqs get-queue-url --queue-name cli 2>"$dir/err"; then fail "a deleted queue's URL"; fi
grep -q NonExistentQueue "$dir/err" || fail "deleted queue: $(cat "$dir/err")"
echo "sqs-cli: every flow passed"
