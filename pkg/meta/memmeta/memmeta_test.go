package memmeta_test

import (
	"testing"

	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/meta/metatest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	metatest.Run(t, func(*testing.T) meta.Store { return memmeta.New() })
}

func TestTenancyConformance(t *testing.T) {
	t.Parallel()
	metatest.RunTenancy(t, func(*testing.T) metatest.TenancyStore { return memmeta.New() })
}
