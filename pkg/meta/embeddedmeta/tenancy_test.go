package embeddedmeta_test

import (
	"path/filepath"
	"testing"

	"github.com/queueshq/queues/pkg/meta/metatest"
)

func TestTenancyConformance(t *testing.T) {
	t.Parallel()
	metatest.RunTenancy(t, func(t *testing.T) metatest.TenancyStore {
		return open(t, filepath.Join(t.TempDir(), "meta.db"))
	})
}
