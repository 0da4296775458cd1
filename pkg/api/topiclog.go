package api

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
)

// Reading a topic's log and keyed state (docs/topics.md).

// defaultLogLimit is a log page's size when the query names none.
const defaultLogLimit = 100

// logCursorVersion begins every log cursor, so its encoding may change.
const logCursorVersion = 1

// encodeLogCursor is the opaque cursor of the next sequence to read.
func encodeLogCursor(next uint64) string {
	var b [9]byte
	b[0] = logCursorVersion
	binary.BigEndian.PutUint64(b[1:], next)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func decodeLogCursor(c string) (uint64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != 9 || b[0] != logCursorVersion {
		return 0, false
	}
	next := binary.BigEndian.Uint64(b[1:])
	return next, next >= 1
}

// logBound is a from or to parameter: a sequence, or an RFC 3339 time.
type logBound struct {
	seq uint64
	at  time.Time
	set bool
}

func parseLogBound(c echo.Context, name string) (logBound, error) {
	v := c.QueryParam(name)
	if v == "" {
		return logBound{}, nil
	}
	if n, ok := parseSequence(v); ok {
		return logBound{seq: n, set: true}, nil
	}
	if at, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return logBound{at: at, set: true}, nil
	}
	return logBound{}, apierr.Invalid(name, "must be a sequence (1 or more) or an RFC 3339 time such as 2026-01-02T15:04:05Z")
}

// logRange is what one log read asks: the sequences from..to (inclusive), up to limit
// entries, matching flt.
type logRange struct {
	from, to uint64
	limit    int
	flt      *filter.Filter
}

// parseLogQuery reads the log read's query; bounds given as times are resolved later.
func parseLogQuery(c echo.Context) (from, to logBound, limit int, cursor uint64, flt *filter.Filter, err error) {
	page, err := pageParams(c, defaultLogLimit, engine.MaxLogRead)
	if err != nil {
		return
	}
	limit = page.Limit
	if page.Cursor != "" {
		var ok bool
		if cursor, ok = decodeLogCursor(page.Cursor); !ok {
			err = apierr.Invalid("cursor", "malformed cursor")
			return
		}
	}
	if from, err = parseLogBound(c, "from"); err != nil {
		return
	}
	if to, err = parseLogBound(c, "to"); err != nil {
		return
	}
	flt, err = filterOfQuery(c.QueryParams()) // filter.go
	return
}

func (s *Server) readLog(c echo.Context) error {
	fromQ, toQ, limit, cursor, flt, err := parseLogQuery(c)
	if err != nil {
		return err
	}
	t, err := s.topic(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	et := engineTopic(t)
	r := logRange{limit: limit, flt: flt}
	if r.from, r.to, err = s.resolveLogRange(ctx, et, fromQ, toQ); err != nil {
		return err
	}
	if cursor > 0 {
		r.from = cursor // the cursor carries on where the last page ended
	}
	entries, next, err := s.scanLog(ctx, et, r)
	if err != nil {
		return err
	}
	out := make([]logEntryJSON, len(entries))
	for i, e := range entries {
		out[i] = logEntryOut(e)
	}
	var nc *string
	if next > 0 {
		nc = cursorOut(encodeLogCursor(next))
	}
	return c.JSON(http.StatusOK, map[string]any{"messages": out, "nextCursor": nc})
}

// resolveLogRange turns from and to into sequences: from defaults to the oldest entry held
// and to to the last; a time from is the first entry published at or after it, a time to the
// last published at or before it.
func (s *Server) resolveLogRange(ctx context.Context, et engine.Topic, fromQ, toQ logBound) (from, to uint64, err error) {
	b, err := s.cfg.TopicEngine.Bounds(ctx, et)
	if err != nil {
		return 0, 0, err
	}
	from, to = max(b.First, 1), b.Last
	switch {
	case fromQ.seq > 0:
		from = fromQ.seq
	case fromQ.set:
		if from, err = s.cfg.TopicEngine.SequenceAt(ctx, et, fromQ.at); err != nil {
			return 0, 0, err
		}
	}
	switch {
	case toQ.seq > 0:
		to = min(toQ.seq, b.Last)
	case toQ.set:
		after, err := s.cfg.TopicEngine.SequenceAt(ctx, et, toQ.at.Add(time.Nanosecond))
		if err != nil {
			return 0, 0, err
		}
		to = min(after-1, b.Last)
	}
	return from, to, nil
}

// scanLog reads up to r.limit entries of r that match r.flt. One page examines at most
// engine.MaxLogRead entries and engine.MaxLogReadBytes of payload (and the entry that
// crosses it), as a browse does, so a selective filter or large entries cost bounded work a
// call; the page then ends early with a cursor. next is the sequence the next page starts
// at (0: the range is done).
func (s *Server) scanLog(ctx context.Context, et engine.Topic, r logRange) (out []engine.LogEntry, next uint64, err error) {
	out = []engine.LogEntry{}
	seq, scanned, bytes := r.from, 0, int64(0)
	for seq <= r.to && len(out) < r.limit {
		if scanned >= engine.MaxLogRead || bytes >= engine.MaxLogReadBytes {
			return out, seq, nil
		}
		want := engine.MaxLogRead - scanned
		if r.flt.Empty() {
			want = min(want, r.limit-len(out))
		}
		entries, err := s.cfg.TopicEngine.ReadLog(ctx, et, seq, want)
		if err != nil {
			return nil, 0, err
		}
		if len(entries) == 0 {
			return out, 0, nil
		}
		for _, e := range entries {
			if e.Sequence > r.to {
				return out, 0, nil
			}
			seq = e.Sequence + 1
			scanned++
			bytes += engine.PayloadBytes(e.Body, e.Attributes)
			if r.flt.Match(e.Attributes) {
				out = append(out, e)
			}
			if len(out) == r.limit || scanned >= engine.MaxLogRead || bytes >= engine.MaxLogReadBytes {
				break
			}
		}
	}
	if seq > r.to {
		return out, 0, nil
	}
	return out, seq, nil
}

type logEntryJSON struct {
	Sequence    uint64            `json:"sequence"`
	MessageID   string            `json:"messageId"`
	Body        *string           `json:"body"`
	Attributes  map[string]string `json:"attributes"`
	PublishedAt string            `json:"publishedAt"`
	GroupID     string            `json:"groupId,omitempty"`
	DedupID     string            `json:"dedupId,omitempty"`
	Key         string            `json:"key,omitempty"`
	Deleted     bool              `json:"deleted,omitempty"`
}

// logEntryOut answers an entry; a deleting entry (a keyed null body) has a null body.
func logEntryOut(e engine.LogEntry) logEntryJSON {
	out := logEntryJSON{
		Sequence: e.Sequence, MessageID: e.MessageID.String(), Attributes: attrsOut(e.Attributes),
		PublishedAt: formatTime(e.PublishedAt), GroupID: e.GroupID, DedupID: e.DedupID, Key: e.Key, Deleted: e.Deleted,
	}
	if !e.Deleted {
		body := e.Body
		out.Body = &body
	}
	return out
}

type stateJSON struct {
	Key         string            `json:"key"`
	Body        string            `json:"body"`
	Attributes  map[string]string `json:"attributes"`
	Sequence    uint64            `json:"sequence"`
	PublishedAt string            `json:"publishedAt"`
}

func stateOut(e engine.StateEntry) stateJSON {
	return stateJSON{Key: e.Key, Body: e.Body, Attributes: attrsOut(e.Attributes), Sequence: e.Sequence, PublishedAt: formatTime(e.PublishedAt)}
}

func (s *Server) readState(c echo.Context) error {
	q := c.QueryParams()
	_, one := q["key"]
	key := c.QueryParam("key")
	if one && (len(key) > engine.MaxKeyLength || !groupIDPattern.MatchString(key)) {
		return apierr.Invalid("key", "must be 1 to %d characters from ! to ~ (no spaces)", engine.MaxKeyLength)
	}
	page, err := pageParams(c, defaultLogLimit, engine.MaxLogRead)
	if err != nil {
		return err
	}
	t, err := s.topic(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	et := engineTopic(t)
	if one {
		e, err := s.cfg.TopicEngine.State(ctx, et, key)
		if apierr.CodeOf(err) == apierr.NotFound {
			return apierr.New(apierr.NotFound, "key %q of topic %q has no state", key, t.Name)
		} else if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, stateOut(e))
	}
	es, next, err := s.cfg.TopicEngine.StatePage(ctx, et, page.Limit, page.Cursor)
	if err != nil {
		return err
	}
	out := make([]stateJSON, len(es))
	for i, e := range es {
		out[i] = stateOut(e)
	}
	return c.JSON(http.StatusOK, map[string]any{"state": out, "nextCursor": cursorOut(next)})
}
