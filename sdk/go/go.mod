module github.com/queueshq/queues/sdk/go

go 1.23.0

require (
	github.com/coder/websocket v1.8.15
	github.com/standard-webhooks/standard-webhooks/libraries v1.3.0
	go.opentelemetry.io/otel v1.38.0
	go.opentelemetry.io/otel/trace v1.38.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	go.opentelemetry.io/auto/sdk v1.1.0 // indirect
	go.opentelemetry.io/otel/metric v1.38.0 // indirect
)
