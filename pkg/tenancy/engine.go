package tenancy

import (
	"context"

	"github.com/queueshq/queues/pkg/ids"
)

// EngineStoredBytes returns the engine's count of a project's stored bytes. This is the one
// place that looks for the method: an engine without it yet reads as storing nothing.
func EngineStoredBytes(eng any) StoredBytesReader {
	if r, ok := eng.(interface {
		StoredBytes(context.Context, ids.ID) (int64, error)
	}); ok {
		return r
	}
	return noStoredBytes{}
}

type noStoredBytes struct{}

func (noStoredBytes) StoredBytes(context.Context, ids.ID) (int64, error) { return 0, nil }
