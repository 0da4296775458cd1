#!/usr/bin/env bash
# The Go SDK (sdk/go) as a user gets it: its own module, with a go directive no newer than 1.23
# and none of the service's dependencies in its module graph; built, vetted and tested on its
# own; then required from a clean project outside this repository (a replace to this checkout
# stands in for `go get github.com/queueshq/queues/sdk/go@vX`), built and run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sdk="$root/sdk/go"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

want_max=123
gover=$(awk '$1 == "go" {print $2}' "$sdk/go.mod")
num=$(echo "$gover" | awk -F. '{printf "%d%02d", $1, $2}')
if [ "$num" -gt "$want_max" ]; then echo "sdk/go/go.mod: go $gover, want <= 1.23"; exit 1; fi
if grep -q '^toolchain' "$sdk/go.mod"; then echo "sdk/go/go.mod names a toolchain"; exit 1; fi

# Modules of the service that must never reach a user's graph through the SDK.
server_deps='^(github.com/queueshq/queues |github.com/aws/|github.com/labstack/|github.com/redis/|go.etcd.io/bbolt|k8s.io/|github.com/chromedp/|github.com/prometheus/|code.dny.dev/ssrf|github.com/spf13/|github.com/golang-jwt/)'

cd "$sdk"
if go list -m all | grep -E "$server_deps"; then echo "sdk/go: the modules above are the service's"; exit 1; fi
go vet ./...
go test -count=1 ./...
go test -count=1 -race ./client/

app=$(mktemp -d)
trap 'rm -rf "$app"' EXIT
cd "$app"
cat > go.mod <<MOD
module example.com/app

go 1.23

require github.com/queueshq/queues/sdk/go v0.0.0-00010101000000-000000000000

replace github.com/queueshq/queues/sdk/go => $sdk
MOD
cat > main.go <<'GO'
// A program a user writes against the SDK: a client, a push receiver and a signature.
package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/sdk/go/webhook"
)

func main() {
	c, err := client.New("http://127.0.0.1:1", client.WithToken("t"))
	if err != nil {
		panic(err)
	}
	_ = c
	secret := webhook.NewSecret()
	sig, err := client.Sign(secret, "msg_1", time.Unix(1700000000, 0), []byte(`{}`))
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	h.Set(client.HeaderWebhookID, "msg_1")
	h.Set(client.HeaderWebhookTimestamp, "1700000000")
	h.Set(client.HeaderWebhookSignature, sig)
	if err := client.Verify([]string{secret}, h, []byte(`{}`), time.Unix(1700000000, 0), time.Minute); err != nil {
		panic(err)
	}
	fmt.Println("ok", client.UserAgent())
}
GO
go mod tidy
if go list -deps . | grep -E '^(github.com/aws/|github.com/labstack/|github.com/redis/|go.etcd.io/|k8s.io/)'; then
  echo "the clean project links the service's packages"; exit 1
fi
go build -o app .
./app | grep -q '^ok queues-go/' || { echo "the clean project did not run"; exit 1; }
echo "sdk/go: go $gover, $(go list -m all | wc -l) modules in a user's graph; built and ran from a clean project"
