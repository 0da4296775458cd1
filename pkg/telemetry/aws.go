package telemetry

import (
	"github.com/aws/smithy-go/tracing"
	"github.com/aws/smithy-go/tracing/smithyoteltracing"
	"go.opentelemetry.io/otel"
)

// AWSTracerProvider is the AWS SDK's tracer provider over the global OpenTelemetry one
// (a span per DynamoDB call, named by the SDK "DynamoDB.<Operation>"), or nil when tracing
// is off, which leaves the SDK's own no-op provider in place.
func AWSTracerProvider() tracing.TracerProvider {
	if !Enabled() {
		return nil
	}
	return smithyoteltracing.Adapt(otel.GetTracerProvider())
}
