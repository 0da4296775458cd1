package movetask

import (
	"context"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
)

// CountBatch counts, moving nothing, what task t would act on in one batch of the source
// from t.Cursor: at most limit messages and engine.MaxMoveBatchBytes of them read. It answers
// how many match, how many could not move (failed), and the cursor after the batch ("" once
// the source is done). The start request counts one batch so, so a small queue's task knows
// its toMove (and a dry run its answer) at once, at a cost bounded whatever the queue holds;
// the runner counts the rest from the cursor.
func CountBatch(ctx context.Context, e engine.Engine, t meta.MoveTask, ch *Chooser, sq engine.Queue, limit int) (matched, failed int, next string, err error) {
	ch.err = nil
	pick := ch.Choose(ctx)
	choose := func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		q, fail := pick(m)
		if q != nil {
			matched++
		}
		return nil, fail // a count takes nothing
	}
	res, err := e.MoveBatch(ctx, sq, engine.MoveRequest{Tag: t.ID.String(), Cursor: t.Cursor, Limit: limit, Choose: choose})
	if err == nil {
		err = ch.err
	}
	if err != nil {
		return 0, 0, "", err
	}
	return matched, res.Failed, res.NextCursor, nil
}
