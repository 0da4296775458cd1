package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// maxReceiptBatch bounds the batch forms of the receipt routes.
const maxReceiptBatch = 100

// receiptEntry is one entry of a receipt call after decoding.
type receiptEntry struct {
	delivery   engine.Delivery
	visibility int64
	reason     string
	err        *apierr.Error // decoding or verification failed: nothing to do
}

type resultJSON struct {
	Index int        `json:"index"`
	Error *errorBody `json:"error,omitempty"`
}

// receiptCall decodes the single or batch form of a receipt route and runs op on the valid
// entries grouped by queue. parseEntry reads one entry's extra fields.
func (s *Server) receiptCall(c echo.Context, single, batch string, singleFields []string,
	parseEntry func(o *object, e *receiptEntry) *apierr.Error,
	op func(ctx context.Context, es []*receiptEntry) ([]error, error)) error {
	if err := s.checkSource(c); err != nil {
		return err
	}
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", false, append(append([]string{}, singleFields...), batch)...)
	if aerr != nil {
		return aerr
	}
	var entries []*receiptEntry
	isBatch := o.has(batch)
	if isBatch {
		for _, f := range singleFields {
			if o.has(f) {
				return apierr.Invalid(f, "send either %q or %q, not both", single, batch)
			}
		}
		items, _, aerr := o.array(batch, 1, maxReceiptBatch)
		if aerr != nil {
			return aerr
		}
		for i, raw := range items {
			e := &receiptEntry{}
			prefix := batch + "[" + strconv.Itoa(i) + "]"
			if batch == "receiptHandles" {
				h, perr := parseString(raw, prefix)
				if perr != nil {
					e.err = perr
				} else {
					var verr error
					e.delivery, verr = s.verify(h, prefix)
					e.err = apiErr(verr)
				}
			} else {
				eo, err := parseObject(raw, prefix, false, singleFields...)
				if err == nil {
					err = s.parseSingle(eo, e, parseEntry)
				}
				e.err = err
			}
			entries = append(entries, e)
		}
		for _, e := range entries {
			s.chargeSource(c, e.err)
		}
	} else {
		e := &receiptEntry{}
		if err := s.parseSingle(o, e, parseEntry); err != nil {
			s.chargeSource(c, err)
			return err
		}
		entries = append(entries, e)
	}

	ctx, cancel := s.storageCtx(c)
	defer cancel()
	// One delivery twice in a batch has no single meaning (ack it twice? which timeout
	// wins?): later copies are refused without touching storage.
	var live []*receiptEntry
	var at []int
	first := map[engine.Delivery]int{}
	for i, e := range entries {
		if e.err != nil {
			continue
		}
		if k, dup := first[e.delivery]; dup {
			e.err = apierr.Invalid(batch+"["+strconv.Itoa(i)+"]", "the same receipt handle is at index %d of this batch", k)
			continue
		}
		first[e.delivery] = i
		live, at = append(live, e), append(at, i)
	}
	queues := make([]ids.ID, 0, 1)
	for _, e := range live {
		if !slices.Contains(queues, e.delivery.Queue) {
			queues = append(queues, e.delivery.Queue)
		}
	}
	if err := s.admitReceipts(ctx, queues); err != nil {
		return err
	}
	if len(live) > 0 {
		errs, err := op(ctx, live)
		if err != nil {
			return err
		}
		for j, i := range at {
			e := apiErr(errs[j])
			if e != nil && e.Field != "" && isBatch {
				// The operation names a field of the entry; the answer names it in the request.
				e = e.WithPrefix(batch + "[" + strconv.Itoa(i) + "]")
			}
			entries[i].err = e
		}
	}
	if !isBatch {
		if e := entries[0].err; e != nil {
			return e
		}
		return c.NoContent(http.StatusNoContent)
	}
	allOK := true
	for _, e := range entries {
		allOK = allOK && e.err == nil
	}
	if allOK { // the usual answer, without reflection: {"results":[{"index":0},…]}
		return blob(c, http.StatusOK, func(b []byte) []byte {
			b = append(b, `{"results":[`...)
			for i := range entries {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"index":`...)
				b = strconv.AppendInt(b, int64(i), 10)
				b = append(b, '}')
			}
			return append(b, "]}"...)
		})
	}
	results := make([]resultJSON, len(entries))
	for i, e := range entries {
		results[i].Index = i
		if e.err != nil {
			b := bodyOf(e.err)
			results[i].Error = &b
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"results": results})
}

func (s *Server) parseSingle(o *object, e *receiptEntry, parseEntry func(*object, *receiptEntry) *apierr.Error) *apierr.Error {
	h, ok, err := o.str("receiptHandle")
	if err != nil {
		return err
	}
	if !ok {
		return apierr.Invalid(o.path("receiptHandle"), "is required")
	}
	d, verr := s.verify(h, o.path("receiptHandle"))
	if verr != nil {
		return apiErr(verr)
	}
	e.delivery = d
	if parseEntry != nil {
		return parseEntry(o, e)
	}
	return nil
}

func (s *Server) verify(h, field string) (engine.Delivery, error) {
	return s.cfg.Receipts.Verify(h, field)
}

func apiErr(err error) *apierr.Error {
	if err == nil {
		return nil
	}
	return apierr.As(err)
}

func (s *Server) ack(c echo.Context) error {
	return s.receiptCall(c, "receiptHandle", "receiptHandles", []string{"receiptHandle"}, nil,
		func(ctx context.Context, es []*receiptEntry) ([]error, error) {
			ds := make([]engine.Delivery, len(es))
			for i, e := range es {
				ds[i] = e.delivery
			}
			return s.Ack(ctx, ds)
		})
}

func (s *Server) changeVisibility(c echo.Context) error {
	return s.receiptCall(c, "receiptHandle", "entries", []string{"receiptHandle", "visibilityTimeoutSeconds"},
		func(o *object, e *receiptEntry) *apierr.Error {
			v, ok, err := o.integer("visibilityTimeoutSeconds", 0, maxVisibility)
			if err != nil {
				return err
			}
			if !ok {
				return apierr.Invalid(o.path("visibilityTimeoutSeconds"), "is required: 0 to %d", maxVisibility)
			}
			e.visibility = v
			return nil
		},
		func(ctx context.Context, es []*receiptEntry) ([]error, error) {
			cs := make([]engine.VisibilityChange, len(es))
			for i, e := range es {
				cs[i] = engine.VisibilityChange{Delivery: e.delivery, Visibility: secs(e.visibility)}
			}
			errs, err := s.ChangeVisibility(ctx, cs)
			for i, e := range errs {
				if apierr.CodeOf(e) == apierr.VisibilityLimitExceeded {
					errs[i] = apierr.Field(apierr.VisibilityLimitExceeded, "visibilityTimeoutSeconds",
						"a message stays in flight at most 12 hours from its receive; this timeout would pass that")
				}
			}
			return errs, err
		})
}

func (s *Server) deadLetter(c echo.Context) error {
	return s.receiptCall(c, "receiptHandle", "entries", []string{"receiptHandle", "reason"},
		func(o *object, e *receiptEntry) *apierr.Error {
			r, ok, err := o.str("reason")
			if err != nil {
				return err
			}
			if ok && (r == "" || utf8.RuneCountInString(r) > 256) {
				return apierr.Invalid(o.path("reason"), "must be 1 to 256 characters")
			}
			e.reason = r
			return nil
		},
		func(ctx context.Context, es []*receiptEntry) ([]error, error) {
			ds := make([]engine.Delivery, len(es))
			for i, e := range es {
				ds[i] = e.delivery
			}
			return s.byQueue(ctx, ds, func(ctx context.Context, q engine.Queue, idx []int) ([]error, error) {
				rs := make([]engine.DeadLetterRequest, len(idx))
				for j, i := range idx {
					rs[j] = engine.DeadLetterRequest{Delivery: es[i].delivery, Reason: es[i].reason}
				}
				errs, err := s.cfg.Engine.DeadLetter(ctx, q, rs)
				s.count("dead_lettered", errs, err)
				return errs, err
			})
		})
}

func (s *Server) count(op string, errs []error, err error) {
	if err != nil {
		return
	}
	n := 0
	for _, e := range errs {
		if e == nil {
			n++
		}
	}
	s.metrics.messages.WithLabelValues(op).Add(float64(n))
}
