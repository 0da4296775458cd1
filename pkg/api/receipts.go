package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
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

// receiptOp is one receipt route: the single form's field, the batch form's array, the
// single form's fields, how one entry's extra fields are read, and the operation run on the
// valid entries.
type receiptOp struct {
	single, batch string
	form          entryForm
	singleFields  []string
	parseEntry    func(o *object, e *receiptEntry) *apierr.Error
	op            func(ctx context.Context, es []*receiptEntry) ([]error, error)
}

// entryForm is how a batch form's entries are written.
type entryForm int

const (
	// objectEntries: each entry is an object of the single form's fields.
	objectEntries entryForm = iota
	// handleEntries: each entry is a bare receipt handle (a string).
	handleEntries
)

// receiptCall decodes the single or batch form of a receipt route and runs its operation on
// the valid entries grouped by queue.
func (s *Server) receiptCall(c echo.Context, r receiptOp) error {
	src := source(c)
	data, err := readBody(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	entries, isBatch, err := s.runReceipts(ctx, src, data, r)
	if err != nil {
		return err
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
		return blob(c, http.StatusOK, func(b []byte) []byte { return appendResults(b, entries) })
	}
	return c.JSON(http.StatusOK, map[string]any{"results": resultsOf(entries)})
}

// appendResults writes {"results":[…]} for entries, without reflection when all succeeded.
func appendResults(b []byte, entries []*receiptEntry) []byte {
	b = append(b, `{"results":[`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		if e.err != nil {
			enc, _ := json.Marshal(resultJSON{Index: i, Error: ptr(bodyOf(e.err))})
			b = append(b, enc...)
			continue
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func ptr[T any](v T) *T { return &v }

func resultsOf(entries []*receiptEntry) []resultJSON {
	results := make([]resultJSON, len(entries))
	for i, e := range entries {
		results[i].Index = i
		if e.err != nil {
			b := bodyOf(e.err)
			results[i].Error = &b
		}
	}
	return results
}

// runReceipts decodes a receipt call's body (from src) and runs r's operation on its valid
// entries. It answers every entry with its error (nil: done) and whether the body was the
// batch form; an error is the whole call's.
func (s *Server) runReceipts(ctx context.Context, src netip.Addr, data []byte, r receiptOp) ([]*receiptEntry, bool, error) {
	batch := r.batch
	o, aerr := parseObject(data, "", false, append(append([]string{}, r.singleFields...), batch)...)
	if aerr != nil {
		return nil, false, aerr
	}
	var entries []*receiptEntry
	isBatch := o.has(batch)
	// The source's forged-handle budget is read before this call charges it: the call's own
	// forgeries are answered receipt_handle_invalid up to the budget, and only invalid handles
	// are ever refused for it — a valid handle is served whoever forged before it.
	wait := s.forged.wait(src)
	if isBatch {
		var err error
		if entries, err = s.receiptEntries(o, r); err != nil {
			return nil, true, err
		}
		valid := 0
		for _, e := range entries {
			s.chargeSource(src, wait, e.err)
			e.err = overBudget(e.err, wait)
			if e.err == nil {
				valid++
			}
		}
		if valid == 0 && wait > 0 {
			return nil, true, limited(wait) // nothing to serve: the whole call is refused
		}
	} else {
		e := &receiptEntry{}
		if err := s.parseSingle(o, e, r.parseEntry); err != nil {
			s.chargeSource(src, wait, err)
			return nil, false, overBudget(err, wait)
		}
		entries = append(entries, e)
	}

	// One delivery twice in a batch has no single meaning (ack it twice? which timeout
	// wins?): later copies are refused without touching storage.
	live, at := make([]*receiptEntry, 0, len(entries)), make([]int, 0, len(entries))
	first := make(map[engine.Delivery]int, len(entries))
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
	live, at = s.dropKnownStale(src, wait, entries, live, at)
	if err := s.settleLive(ctx, src, wait, entries, live, at, r, isBatch); err != nil {
		return nil, isBatch, err
	}
	return entries, isBatch, nil
}

// dropKnownStale answers the live entries whose handle this replica has seen stale (410, or
// 429 once the source is over its budget) without storage or the project's budget, charging
// each to the source; it returns the entries left.
func (s *Server) dropKnownStale(src netip.Addr, wait time.Duration, entries, live []*receiptEntry, at []int) ([]*receiptEntry, []int) {
	var keepLive []*receiptEntry
	var keepAt []int
	for j, e := range live {
		if !s.stale.has(e.delivery) {
			keepLive, keepAt = append(keepLive, e), append(keepAt, at[j])
			continue
		}
		s.chargeSource(src, wait, apierr.ErrStale)
		entries[at[j]].err = overBudget(apierr.ErrStale, wait)
	}
	return keepLive, keepAt
}

// settleLive runs r's operation on the live entries (at their indexes at) and answers them.
// The projects of their queues are rate-limited before it, but a project's request is
// metered only when one of its handles proved current: a stale handle, which anyone who once
// saw it may present, is charged to its source and remembered instead.
func (s *Server) settleLive(ctx context.Context, src netip.Addr, wait time.Duration, entries, live []*receiptEntry, at []int, r receiptOp, isBatch bool) error {
	if len(live) == 0 {
		return nil
	}
	queues := make([]ids.ID, 0, 1)
	for _, e := range live {
		if !slices.Contains(queues, e.delivery.Queue) {
			queues = append(queues, e.delivery.Queue)
		}
	}
	projects, err := s.admitReceipts(ctx, queues)
	if err != nil {
		return err
	}
	errs, err := r.op(ctx, live)
	if err != nil {
		return err
	}
	current := map[ids.ID]bool{}
	for j, i := range at {
		e := apiErr(errs[j])
		if e != nil && e.Code == apierr.ReceiptHandleStale {
			s.stale.add(live[j].delivery)
			s.chargeSource(src, wait, e)
		} else if p, ok := projects[live[j].delivery.Queue]; ok {
			current[p] = true
		}
		if e != nil && e.Field != "" && isBatch {
			// The operation names a field of the entry; the answer names it in the request.
			e = e.WithPrefix(r.batch + "[" + strconv.Itoa(i) + "]")
		}
		entries[i].err = e
	}
	for p := range current {
		s.cfg.Meter.Add(p, meta.Counters{Requests: 1})
	}
	return nil
}

// receiptEntries reads the entries of a batch form.
func (s *Server) receiptEntries(o *object, r receiptOp) ([]*receiptEntry, error) {
	for _, f := range r.singleFields {
		if o.has(f) {
			return nil, apierr.Invalid(f, "send either %q or %q, not both", r.single, r.batch)
		}
	}
	items, _, aerr := o.array(r.batch, 1, maxReceiptBatch)
	if aerr != nil {
		return nil, aerr
	}
	entries := make([]*receiptEntry, 0, len(items))
	for i, raw := range items {
		entries = append(entries, s.batchEntry(raw, r.batch+"["+strconv.Itoa(i)+"]", r))
	}
	return entries, nil
}

// batchEntry reads one entry of a batch form (at prefix), in r's entry form.
func (s *Server) batchEntry(raw []byte, prefix string, r receiptOp) *receiptEntry {
	e := &receiptEntry{}
	if r.form == handleEntries {
		h, perr := parseString(raw, prefix)
		if perr != nil {
			e.err = perr
			return e
		}
		var verr error
		e.delivery, verr = s.verify(h, prefix)
		e.err = apiErr(verr)
		return e
	}
	eo, err := parseObject(raw, prefix, false, r.singleFields...)
	if err == nil {
		err = s.parseSingle(eo, e, r.parseEntry)
	}
	e.err = err
	return e
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
	return asAPI(err)
}

func (s *Server) ack(c echo.Context) error { return s.receiptCall(c, s.ackOp()) }

func (s *Server) ackOp() receiptOp {
	return receiptOp{single: "receiptHandle", batch: "receiptHandles", form: handleEntries, singleFields: []string{"receiptHandle"},
		op: func(ctx context.Context, es []*receiptEntry) ([]error, error) {
			ds := make([]engine.Delivery, len(es))
			for i, e := range es {
				ds[i] = e.delivery
			}
			return s.Ack(ctx, ds)
		}}
}

func (s *Server) cancel(c echo.Context) error { return s.receiptCall(c, s.cancelOp()) }

// cancelOp is ackOp's shape: a handle, or an array of bare handles.
func (s *Server) cancelOp() receiptOp {
	return receiptOp{single: "receiptHandle", batch: "receiptHandles", form: handleEntries, singleFields: []string{"receiptHandle"},
		op: func(ctx context.Context, es []*receiptEntry) ([]error, error) {
			ds := make([]engine.Delivery, len(es))
			for i, e := range es {
				ds[i] = e.delivery
			}
			return s.Cancel(ctx, ds)
		}}
}

func (s *Server) changeVisibility(c echo.Context) error { return s.receiptCall(c, s.visibilityOp()) }

func (s *Server) visibilityOp() receiptOp {
	return receiptOp{single: "receiptHandle", batch: "entries", form: objectEntries, singleFields: []string{"receiptHandle", "visibilityTimeoutSeconds"},
		parseEntry: func(o *object, e *receiptEntry) *apierr.Error {
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
		op: func(ctx context.Context, es []*receiptEntry) ([]error, error) {
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
		}}
}

func (s *Server) deadLetter(c echo.Context) error { return s.receiptCall(c, s.deadLetterOp()) }

func (s *Server) deadLetterOp() receiptOp {
	return receiptOp{single: "receiptHandle", batch: "entries", form: objectEntries, singleFields: []string{"receiptHandle", "reason"},
		parseEntry: func(o *object, e *receiptEntry) *apierr.Error {
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
		op: func(ctx context.Context, es []*receiptEntry) ([]error, error) {
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
				s.heldSettled(ctx, q, deliveriesOf(rs), errs, nil)
				s.count("dead_lettered", errs, err)
				return errs, err
			})
		}}
}
