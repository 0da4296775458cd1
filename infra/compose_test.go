// Package infra holds the deployment files' checks: docker-compose.yml is parsed and validated
// with compose-go (no Docker engine needed) and held to what the service requires.
package infra

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
)

func TestComposeFile(t *testing.T) {
	root, _ := filepath.Abs("..")
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv([]string{"QUEUES_OPERATOR_TOKEN=op", "QUEUES_SIGNING_KEYS=k1:MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="}),
		cli.WithInterpolation(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	for _, name := range []string{"redis", "dynamodb", "migrate", "api"} {
		if _, err := p.GetService(name); err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
	}
	redis, _ := p.GetService("redis")
	cmd := strings.Join(redis.Command, " ")
	for _, want := range []string{"--appendonly yes", "--maxmemory-policy noeviction"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("redis command %q lacks %q", cmd, want)
		}
	}
	if !strings.HasPrefix(redis.Image, "redis:7.0") {
		t.Errorf("redis image %q: pin the 7.0 line the tests run against", redis.Image)
	}
	api, _ := p.GetService("api")
	for _, v := range []string{"QUEUES_LISTEN", "QUEUES_REDIS_URL", "QUEUES_DYNAMODB_ENDPOINT", "QUEUES_DYNAMODB_TABLE", "QUEUES_OPERATOR_TOKEN", "QUEUES_SIGNING_KEYS"} {
		if api.Environment[v] == nil {
			t.Errorf("api lacks %s", v)
		}
	}
	if !slices.Contains(api.Command, "api") {
		t.Errorf("api command %v", api.Command)
	}
	if dep, ok := api.DependsOn["migrate"]; !ok || dep.Condition != "service_completed_successfully" {
		t.Errorf("api must wait for the migration: %+v", api.DependsOn)
	}
	migrate, _ := p.GetService("migrate")
	if migrate.Build == nil || migrate.Build.Dockerfile != "infra/Dockerfile" {
		t.Errorf("migrate build: %+v", migrate.Build)
	}
	df, err := os.ReadFile(filepath.Join(root, "infra", "Dockerfile"))
	if err != nil || !strings.Contains(string(df), "./services/queues") {
		t.Fatalf("infra/Dockerfile must build ./services/queues: %v", err)
	}
}
