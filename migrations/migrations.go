// Package migrations holds the DynamoDB schema of the metadata table, embedded in the binary.
//
// Each NNNN_*.json file is a CreateTable request in the shape of the AWS CLI's
// `aws dynamodb create-table --cli-input-json` (the TableName in it is the default; the
// `queues migrate` command substitutes the configured one). dynamometa.Migrate applies them.
//
// Table layout (one table, string keys pk and sk, no index):
//
//	pk=P#<project id>   sk=P              project
//	pk=PROJECTS         sk=<project id>   project listing entry (copy of the project)
//	pk=P#<project id>   sk=T#<token id>   token
//	pk=P#<project id>   sk=Q#<name>       queue settings and Version (names unique per project)
//	pk=QID#<queue id>   sk=Q              queue id index: project, name, type, dead-letter reference count
//	pk=P#<project id>   sk=TN#<name>      topic settings and Version (names unique per project)
//	pk=TOPIC#<topic id> sk=T              topic id index: project, name, binding count, deleting
//	pk=TOPIC#<topic id> sk=B#<binding id> a binding, the topic's copy (a topic's bindings: one Query)
//	pk=QB#<queue id>    sk=B#<topic id>   a binding, the queue's copy (one per queue and topic; a
//	                                      queue's bindings: one Query)
//	pk=QB#<queue id>    sk=N              how many bindings the queue has
//
// Other items (subscriptions, move tasks, usage) are described where they are kept, in
// package dynamometa.
//
// Ids are lowercase UUID strings.
package migrations

import "embed"

// FS holds the migration files (*.json).
//
//go:embed *.json
var FS embed.FS
