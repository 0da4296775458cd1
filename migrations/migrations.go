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
//
// Ids are lowercase UUID strings.
package migrations

import "embed"

// FS holds the migration files (*.json).
//
//go:embed *.json
var FS embed.FS
