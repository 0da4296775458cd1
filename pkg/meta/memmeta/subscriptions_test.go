package memmeta_test

import (
	"testing"

	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/meta/metatest"
)

func TestSubscriptionConformance(t *testing.T) {
	t.Parallel()
	metatest.RunSubscriptions(t, func(*testing.T) metatest.SubscriptionStore { return memmeta.New() })
}

func TestMoveTaskConformance(t *testing.T) {
	t.Parallel()
	metatest.RunMoveTasks(t, func(*testing.T) meta.MoveTaskStore { return memmeta.New() })
}

func TestTopicConformance(t *testing.T) {
	t.Parallel()
	metatest.RunTopics(t, func(*testing.T) metatest.TopicStore { return memmeta.New() })
}

func TestHealthConformance(t *testing.T) {
	t.Parallel()
	metatest.RunHealth(t, func(*testing.T) meta.HealthLog { return memmeta.NewHealth() })
}
