module github.com/queueshq/queues/tests/sqslegacy

go 1.26.8

require (
	github.com/aws/aws-sdk-go-v2 v1.22.1
	github.com/aws/aws-sdk-go-v2/service/sqs v1.26.0
	github.com/aws/smithy-go v1.16.0
)

require (
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.2.1 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.5.1 // indirect
)
