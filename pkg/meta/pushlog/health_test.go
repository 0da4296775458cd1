package pushlog_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/metatest"
	"github.com/queueshq/queues/pkg/meta/pushlog"
	"github.com/queueshq/queues/pkg/testservers"
)

func TestHealthConformance(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	metatest.RunHealth(t, func(t *testing.T) meta.HealthLog {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		return pushlog.NewHealth(rdb)
	})
}
