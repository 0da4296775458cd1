package client

import (
	"context"
	"slices"
	"sync"
	"time"
)

// gatherWait bounds how long a poller waits for room for a full batch (see take).
const gatherWait = 5 * time.Millisecond

// ackFlushers is how many acknowledgement calls may be in flight at once: at tens of
// thousands of messages a second one call at a time would hold the handlers up for its
// round trip.
const ackFlushers = 4

// acker sends acknowledgements in batches: when AckBatchSize are waiting, every AckInterval,
// and when the consumer stops (once every handler's settlement has been queued).
func (co *consumer) acker() {
	defer close(co.ackDone)
	var flushing sync.WaitGroup
	slots := make(chan struct{}, ackFlushers)
	t := time.NewTicker(co.o.AckInterval)
	defer t.Stop()
	batch := make([]string, 0, co.o.AckBatchSize)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		b := batch
		batch = make([]string, 0, co.o.AckBatchSize)
		slots <- struct{}{}
		flushing.Add(1)
		go func() {
			defer flushing.Done()
			defer func() { <-slots }()
			co.sendAcks(b)
		}()
	}
	for {
		select {
		case h, ok := <-co.acks:
			if !ok {
				flush()
				flushing.Wait()
				return
			}
			batch = append(batch, h)
			if len(batch) >= co.o.AckBatchSize {
				flush()
			}
		case <-t.C:
			flush()
		}
	}
}

func (co *consumer) sendAcks(handles []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The body is written by hand: encoding/json's reflection was most of an ack's CPU.
	b := make([]byte, 0, 24+len(handles)*(len(handles[0])+3))
	b = append(b, `{"receiptHandles":[`...)
	for i, h := range handles {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, h)
	}
	b = append(b, "]}"...)
	var res BatchErrors
	var err error
	s := co.stream.Load()
	if s != nil {
		res, err = s.callRaw(ctx, "ack", b, len(handles))
	}
	if s == nil || err != nil {
		// No stream, or it failed the call as a whole (closed, over a limit): the handles
		// are as good over HTTP, with its retries.
		res, err = co.c.batch(ctx, "/v1/receipts/ack", RawBody{ContentType: "application/json", Data: b}, len(handles))
	}
	if err != nil {
		co.report("ack", "", err)
	}
	for _, e := range res {
		co.report("ack", "", e)
	}
}

// changeVisibility retries one message: over the stream when one is open, else over HTTP.
func (co *consumer) changeVisibility(ctx context.Context, handle string, seconds int) error {
	if s := co.stream.Load(); s != nil {
		res, err := s.ChangeVisibility(ctx, []VisibilityEntry{{handle, seconds}})
		if err == nil {
			return res[0]
		}
	}
	return co.c.ChangeVisibility(ctx, handle, seconds)
}

// heartbeats extends, in batches, the visibility of every held message (waiting for a
// handler or running) once half the visibility timeout has passed since it was last set,
// until the handlers' context ends. It closes done when it returns.
func (co *consumer) heartbeats(done chan<- struct{}) {
	defer close(done)
	half := co.vt / 2
	t := time.NewTicker(max(co.vt/8, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-co.hctx.Done():
			return
		case now := <-t.C:
			if due := co.due(now.Add(-half)); len(due) > 0 {
				co.extend(due, half)
			}
		}
	}
}

// due returns the held messages whose visibility was last set before cutoff.
func (co *consumer) due(cutoff time.Time) []*delivery {
	co.mu.Lock()
	defer co.mu.Unlock()
	var due []*delivery
	for d := range co.held {
		if !d.noBeat && !d.abandoned && d.extended.Before(cutoff) {
			due = append(due, d)
		}
	}
	return due
}

// extend sets ds' visibility deadlines to now + the visibility timeout. A handle that can no
// longer be extended (stale, over the 12-hour limit) is not tried again; other failures are
// retried at the next tick.
func (co *consumer) extend(ds []*delivery, timeout time.Duration) {
	secs := int(co.vt / time.Second)
	for len(ds) > 0 {
		n := min(len(ds), MaxReceiptBatch)
		entries := make([]VisibilityEntry, n)
		for i, d := range ds[:n] {
			entries[i] = VisibilityEntry{ReceiptHandle: d.m.ReceiptHandle, VisibilityTimeoutSeconds: secs}
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(co.hctx, timeout)
		res, err := co.c.ChangeVisibilityBatch(ctx, entries)
		cancel()
		if err != nil {
			co.report("heartbeat", "", err)
			return
		}
		co.mu.Lock()
		for i, d := range ds[:n] {
			switch e := res[i]; {
			case e == nil:
				d.extended = sent
			case IsStale(e) || CodeOf(e) == CodeVisibilityLimitExceeded || CodeOf(e) == CodeReceiptHandleInvalid:
				d.noBeat = true
			}
		}
		co.mu.Unlock()
		for i, e := range res {
			co.report("heartbeat", ds[i].m.MessageID, e)
		}
		ds = ds[n:]
	}
}

// waiting takes the messages no handler has started out of the (closed) work queue and
// marks them abandoned, so that they can be released at once.
func (co *consumer) waiting() []*delivery {
	var ds []*delivery
	for d := range co.work {
		ds = append(ds, d)
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	for _, d := range ds {
		d.abandoned = true
		delete(co.held, d)
	}
	return ds
}

// abandonAll marks every message still held abandoned (a handler's later result is ignored)
// and returns them, for release.
func (co *consumer) abandonAll() []*delivery {
	co.mu.Lock()
	defer co.mu.Unlock()
	ds := make([]*delivery, 0, len(co.held))
	for d := range co.held {
		d.abandoned = true
		ds = append(ds, d)
	}
	clear(co.held)
	return ds
}

// release makes ds' messages visible again at once (those without a handle, of an
// at-most-once queue, are gone already).
func (co *consumer) release(ds []*delivery) {
	ds = slices.DeleteFunc(ds, func(d *delivery) bool { return d.m.ReceiptHandle == "" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(ds) > 0 {
		n := min(len(ds), MaxReceiptBatch)
		entries := make([]VisibilityEntry, n)
		for i, d := range ds[:n] {
			entries[i] = VisibilityEntry{ReceiptHandle: d.m.ReceiptHandle}
		}
		res, err := co.c.ChangeVisibilityBatch(ctx, entries)
		if err != nil {
			co.report("release", "", err)
		}
		for i, e := range res {
			co.report("release", ds[i].m.MessageID, e)
		}
		ds = ds[n:]
	}
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, everything else (UTF-8 included) as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
