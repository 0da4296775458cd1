package memmeta_test

import (
	"testing"

	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/meta/metatest"
)

func TestSubscriptionConformance(t *testing.T) {
	metatest.RunSubscriptions(t, func(*testing.T) metatest.SubscriptionStore { return memmeta.New() })
}
