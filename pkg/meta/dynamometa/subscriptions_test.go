package dynamometa_test

import (
	"testing"

	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/meta/metatest"
)

func TestSubscriptionConformance(t *testing.T) {
	c := client(t)
	metatest.RunSubscriptions(t, func(t *testing.T) metatest.SubscriptionStore {
		return dynamometa.New(c, newTable(t, c))
	})
}

func TestMoveTaskConformance(t *testing.T) {
	c := client(t)
	metatest.RunMoveTasks(t, func(t *testing.T) meta.MoveTaskStore {
		return dynamometa.New(c, newTable(t, c))
	})
}

func TestTopicConformance(t *testing.T) {
	c := client(t)
	metatest.RunTopics(t, func(t *testing.T) metatest.TopicStore {
		return dynamometa.New(c, newTable(t, c))
	})
}
