package api

import (
	"context"

	"github.com/queueshq/queues/pkg/ids"
)

// MaxStoredBytes is a project's maxStoredBytes as its sends see it (its own limit over the
// operator's default, cached as the sends' is): the fan-out bounds the copies it makes into
// the project's queues by it, as a send is bounded (package fanout, Limits).
func (s *Server) MaxStoredBytes(ctx context.Context, project ids.ID) (int64, error) {
	lim, err := s.effectiveLimits(ctx, project)
	if err != nil {
		return 0, err
	}
	return lim.MaxStoredBytes, nil
}
