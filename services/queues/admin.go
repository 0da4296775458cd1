package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
)

func migrate(ctx context.Context, ddb *dynamodb.Client, table string) error {
	return dynamometa.Migrate(ctx, ddb, table)
}

// adminCommand is queues admin: project and token administration directly in DynamoDB.
var adminCommand = operatorCommand{
	use: "admin", summary: "manage projects and tokens directly in DynamoDB",
	long: `The admin command talks to DynamoDB directly (same --dynamodb-* flags as api) and signs tokens
with QUEUES_SIGNING_KEYS; it needs no running API. Output is JSON.`,
	example: `  queues admin project create --name NAME
  queues admin project list
  queues admin token create --project PROJECT --name NAME --scopes SCOPE[,SCOPE…] [--ttl DURATION]
  queues admin token revoke --project PROJECT --token TOKEN
  queues admin project limits get|set --project PROJECT [NAME=VALUE|NAME=default …]`,
	subs: []operatorCommand{
		{use: "project", summary: "create and list projects, read and change their limits", subs: []operatorCommand{
			{use: "create", summary: "create a project (--name)", define: adminLeaf(adminProjectCreate)},
			{use: "list", summary: "list the projects", define: adminLeaf(adminProjectList)},
			adminLimitsCommand,
		}},
		{use: "token", summary: "create and revoke tokens", subs: []operatorCommand{
			{use: "create", summary: "create a token of a project (--project, --name, --scopes, --ttl)", define: adminLeaf(adminTokenCreate)},
			{use: "revoke", summary: "revoke a token (--project, --token)", define: adminLeaf(adminTokenRevoke)},
		}},
	},
}

// adminArgs are the flags of the admin commands (each reads the ones it needs).
type adminArgs struct {
	sigKeys, name, project, token, scopes string
	ttl                                   time.Duration
}

// adminFunc is one admin command, run once its flags are parsed.
type adminFunc func(context.Context, *dynamometa.Store, adminArgs, time.Time, *json.Encoder) error

// adminLeaf defines an admin project or token command: every one takes the same flags, as
// it did before they were cobra's.
func adminLeaf(run adminFunc) func(fs *pflag.FlagSet) operatorRun {
	return func(fs *pflag.FlagSet) operatorRun {
		var st storeFlags
		st.register(fs)
		var a adminArgs
		fs.StringVar(&a.sigKeys, "signing-keys", env("QUEUES_SIGNING_KEYS", ""), "kid:base64secret,… (QUEUES_SIGNING_KEYS)")
		fs.StringVar(&a.name, "name", "", "name of the project or token")
		fs.StringVar(&a.project, "project", "", "project id or prj_ slug")
		fs.StringVar(&a.token, "token", "", "token id or tok_ slug")
		fs.StringVar(&a.scopes, "scopes", "*", "comma-separated scopes: "+strings.Join(auth.AllScopes, ", "))
		fs.DurationVar(&a.ttl, "ttl", 0, "token lifetime (0: no expiry)")
		return func(ctx context.Context, _ []string) error {
			ddb, err := st.client(ctx)
			if err != nil {
				return err
			}
			out := json.NewEncoder(os.Stdout)
			out.SetIndent("", "  ")
			return run(ctx, dynamometa.New(ddb, st.table), a, time.Now().UTC().Truncate(time.Millisecond), out)
		}
	}
}

func adminProjectCreate(ctx context.Context, store *dynamometa.Store, a adminArgs, now time.Time, out *json.Encoder) error {
	if a.name == "" {
		return errors.New("-name is required")
	}
	p := meta.Project{ID: ids.New(), Name: a.name, CreatedAt: now}
	if err := store.CreateProject(ctx, p); err != nil {
		return err
	}
	return out.Encode(map[string]string{"id": p.ID.String(), "slug": p.ID.Slug(ids.ProjectPrefix), "name": p.Name})
}

func adminProjectList(ctx context.Context, store *dynamometa.Store, _ adminArgs, _ time.Time, out *json.Encoder) error {
	cursor := ""
	for {
		ps, next, err := store.ListProjects(ctx, meta.Page{Limit: 1000, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, p := range ps {
			if err := out.Encode(map[string]string{"id": p.ID.String(), "slug": p.ID.Slug(ids.ProjectPrefix), "name": p.Name}); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

func adminTokenCreate(ctx context.Context, store *dynamometa.Store, a adminArgs, now time.Time, out *json.Encoder) error {
	ring, err := signingKeys(a.sigKeys)
	if err != nil {
		return err
	}
	pid, err := ids.Parse(ids.ProjectPrefix, a.project)
	if err != nil {
		return fmt.Errorf("-project: %w", err)
	}
	if _, err := store.GetProject(ctx, pid); err != nil {
		return fmt.Errorf("project %s: %w", a.project, err)
	}
	sc := strings.Split(a.scopes, ",")
	for _, s := range sc {
		if !slices.Contains(auth.AllScopes, s) {
			return fmt.Errorf("-scopes: unknown scope %q", s)
		}
	}
	t := meta.Token{ID: ids.New(), ProjectID: pid, Name: a.name, Scopes: sc, CreatedAt: now}
	if a.ttl > 0 {
		exp := now.Add(a.ttl)
		t.ExpiresAt = &exp
	}
	authority := auth.New(ring, "", time.Now)
	jwt, err := authority.Issue(pid, t.ID, sc, now, t.ExpiresAt)
	if err != nil {
		return err
	}
	if err := store.CreateToken(ctx, t); err != nil {
		return err
	}
	return out.Encode(map[string]any{"id": t.ID.String(), "slug": t.ID.Slug(ids.TokenPrefix), "token": jwt, "scopes": sc, "expiresAt": t.ExpiresAt,
		"sqsSecretAccessKey": authority.SQSSecret(t.ID)})
}

func adminTokenRevoke(ctx context.Context, store *dynamometa.Store, a adminArgs, now time.Time, _ *json.Encoder) error {
	pid, err := ids.Parse(ids.ProjectPrefix, a.project)
	if err != nil {
		return fmt.Errorf("-project: %w", err)
	}
	tid, err := ids.Parse(ids.TokenPrefix, a.token)
	if err != nil {
		return fmt.Errorf("-token: %w", err)
	}
	return store.RevokeToken(ctx, pid, tid, now)
}
