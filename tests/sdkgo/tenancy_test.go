package sdkgo

import (
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// tenancyRoutes: limits and usage through the SDK, and a quota refusal as IsQuotaExceeded.
func tenancyRoutes(t *testing.T, tn *tenant) {
	ctx := t.Context()
	op, c := tn.op, tn.c
	p, err := op.GetProject(ctx, tn.project)
	if err != nil || p.Limits == nil || p.Usage == nil || p.Limits.MaxQueues != 1000 || p.Limits.MaxStoredBytes != 1<<30 {
		t.Fatalf("get project: %+v %v", p, err)
	}
	held := p.Usage.Queues
	p, err = op.UpdateProjectLimits(ctx, tn.project, client.LimitsUpdate{MaxQueues: client.Int64(held), RequestsPerSecond: client.Int64(5000)})
	if err != nil || p.Limits.MaxQueues != held || p.Limits.RequestsPerSecond != 5000 || p.Limits.MaxSubscriptions != 100 {
		t.Fatalf("update limits: %+v %v", p.Limits, err)
	}
	_, err = c.CreateQueue(ctx, client.CreateQueueInput{Name: "one-too-many"})
	if !client.IsQuotaExceeded(err) || client.QuotaLimit(err) != client.LimitMaxQueues || client.IsAuth(err) {
		t.Fatalf("create over maxQueues: %v (limit %q)", err, client.QuotaLimit(err))
	}
	own, err := c.OwnProject(ctx)
	if err != nil || own.ID != tn.project || own.Limits.MaxQueues != held || own.Usage.Queues != held {
		t.Fatalf("own project: %+v %v", own, err)
	}
	p, err = op.UpdateProjectLimits(ctx, tn.project, client.LimitsUpdate{Reset: []string{client.LimitMaxQueues, client.LimitRequestsPerSecond}})
	if err != nil || p.Limits.MaxQueues != 1000 || p.Limits.RequestsPerSecond != 10000 {
		t.Fatalf("reset limits: %+v %v", p.Limits, err)
	}
	if _, err := op.UpdateProjectLimits(ctx, tn.project, client.LimitsUpdate{MaxQueues: client.Int64(-1)}); !client.IsInvalid(err) {
		t.Fatalf("a negative limit: %v", err)
	}
	r := client.UsageRange{From: time.Now().Add(-2 * time.Hour), To: time.Now().Add(time.Hour)}
	if _, err := op.ProjectUsage(ctx, tn.project, r); err != nil {
		t.Fatalf("project usage: %v", err)
	}
	if _, err := c.OwnUsage(ctx, client.UsageRange{}); err != nil {
		t.Fatalf("own usage: %v", err)
	}
	if _, err := c.OwnUsage(ctx, client.UsageRange{From: time.Now(), To: time.Now().Add(-time.Hour)}); !client.IsInvalid(err) {
		t.Fatalf("usage with to before from: %v", err)
	}
}
