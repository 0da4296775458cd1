// Package service is the service layer: what the queues do, behind both doors to them. The
// /v1 HTTP API (pkg/api) and the SQS door (pkg/sqs) are adapters over it: they decode their
// protocol's requests, call the same operations here and write their protocol's answers from
// the errors returned (apierr values and the refusals' answers, refusals.go). It speaks no
// HTTP.
//
// It holds the queue rules both doors check (queuerules.go), the answers to the engines' and
// the metadata stores' refusals, and the move-task request both doors start. docs/architecture.md
// ("Packages") says what is here and what is still in pkg/api.
package service
