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
	"github.com/compose-spec/compose-go/v2/types"
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
	for _, name := range []string{"redis", "dynamodb", "migrate", "api", "pusher"} {
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
	checkHealthchecks(t, p)
	pusher, _ := p.GetService("pusher")
	if !slices.Contains(pusher.Command, "pusher") || pusher.Image != api.Image {
		t.Errorf("pusher: command %v image %q (want the api's image %q)", pusher.Command, pusher.Image, api.Image)
	}
	for _, v := range []string{"QUEUES_REDIS_URL", "QUEUES_DYNAMODB_ENDPOINT", "QUEUES_DYNAMODB_TABLE", "QUEUES_SIGNING_KEYS", "QUEUES_PUSHER_LISTEN"} {
		if pusher.Environment[v] == nil {
			t.Errorf("pusher lacks %s", v)
		}
	}
	// Both tiers must sign and verify with the same keys, and reach the same stores.
	for _, v := range []string{"QUEUES_REDIS_URL", "QUEUES_DYNAMODB_ENDPOINT", "QUEUES_DYNAMODB_TABLE", "QUEUES_SIGNING_KEYS"} {
		if *api.Environment[v] != *pusher.Environment[v] {
			t.Errorf("%s differs: api %q, pusher %q", v, *api.Environment[v], *pusher.Environment[v])
		}
	}
	if dep, ok := pusher.DependsOn["migrate"]; !ok || dep.Condition != "service_completed_successfully" {
		t.Errorf("pusher must wait for the migration: %+v", pusher.DependsOn)
	}
	df, err := os.ReadFile(filepath.Join(root, "infra", "Dockerfile"))
	if err != nil || !strings.Contains(string(df), "./services/queues") {
		t.Fatalf("infra/Dockerfile must build ./services/queues: %v", err)
	}
}

// checkHealthchecks holds every long-running service to a healthcheck. A job (a service others
// wait on with service_completed_successfully) is exempt: its health is its exit status. The
// queues image is distroless, so its probes must be `queues health` against its own listener.
func checkHealthchecks(t *testing.T, p *types.Project) {
	t.Helper()
	jobs := map[string]bool{}
	for _, s := range p.Services {
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionCompletedSuccessfully {
				jobs[dep] = true
			}
		}
	}
	for name, s := range p.Services {
		hc := s.HealthCheck
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionHealthy {
				if h := p.Services[dep].HealthCheck; h == nil || h.Disable {
					t.Errorf("%s waits for %s to be healthy, which has no healthcheck", name, dep)
				}
			}
		}
		if jobs[name] {
			if s.Restart != "on-failure" && s.Restart != "no" && s.Restart != "" {
				t.Errorf("job %s restarts %q: a job must be allowed to finish", name, s.Restart)
			}
			continue
		}
		if hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] == "NONE" {
			t.Errorf("service %s has no healthcheck", name)
			continue
		}
		if hc.Interval == nil || hc.Timeout == nil || hc.Retries == nil {
			t.Errorf("service %s: healthcheck without interval, timeout or retries: %+v", name, hc)
		}
		if s.Image != "queues:local" {
			continue
		}
		if hc.Test[0] != "CMD" || !slices.Contains(hc.Test, "health") {
			t.Errorf("service %s: probe %v: the distroless image needs [CMD, queues, health, URL]", name, hc.Test)
			continue
		}
		listen := "QUEUES_LISTEN"
		if slices.Contains(s.Command, "pusher") {
			listen = "QUEUES_PUSHER_LISTEN"
		}
		addr := s.Environment[listen]
		if addr == nil {
			t.Errorf("service %s: no %s for its probe to reach", name, listen)
			continue
		}
		_, port, _ := strings.Cut(*addr, ":")
		if probe := hc.Test[len(hc.Test)-1]; !strings.Contains(probe, "127.0.0.1:"+port+"/") {
			t.Errorf("service %s probes %s, but listens on %s", name, probe, *addr)
		}
	}
}
