package service

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/rediskeys"
	"github.com/queueshq/queues/pkg/tenancy"
)

// refusal is one refusal a send may run into, set up on a fixture.
type refusal uint8

const (
	requestRate refusal = 1 << iota
	sendBytes
	fullProject
	queueRate
)

// refuse makes every refusal in r apply to the fixture's next send, each limit with its own
// wait so the answer tells which one refused.
func (f *fixture) refuse(r refusal) {
	if r&requestRate != 0 {
		f.lim.refuse(tenancy.RateKey(f.project), 1*time.Second)
	}
	if r&sendBytes != 0 {
		f.lim.refuse(tenancy.ByteRateKey(f.project), 2*time.Second)
	}
	if r&queueRate != 0 {
		f.lim.refuse(rediskeys.QueueRate(f.q.ID, "send"), 3*time.Second)
	}
	if r&fullProject != 0 {
		// Marked by an earlier send's refusal, and still at the limit.
		f.svc.noteSendErr(f.q, &engine.StoredBytesExceeded{Limit: tenancy.Defaults.MaxStoredBytes})
		f.svc.cfg.Engine.(*storedBytesEngine).stored = tenancy.Defaults.MaxStoredBytes
	}
}

// TestAdmitSendOrder: when several refusals apply, AdmitSend answers the first in its order —
// request rate, send bytes, full project (whose queue's send rate goes first) — each with its
// wait; a request the door counted skips the request rate.
func TestAdmitSendOrder(t *testing.T) {
	t.Parallel()
	all := requestRate | sendBytes | fullProject | queueRate
	reqMsg := fmt.Sprintf("over the project's limit of %d requests a second", tenancy.Defaults.RequestsPerSecond)
	bytesMsg := fmt.Sprintf("over the project's limit of %d send bytes a second", tenancy.Defaults.SendBytesPerSecond)
	for _, c := range []struct {
		name    string
		refuse  refusal
		counted bool
		step    SendStep
		code    apierr.Code
		retry   time.Duration
		message string
	}{
		{"all", all, false, StepRequestRate, apierr.RateLimited, 1 * time.Second, reqMsg},
		{"counted", all, true, StepSendBytes, apierr.RateLimited, 2 * time.Second, bytesMsg},
		{"bytes and full", sendBytes | fullProject | queueRate, false, StepSendBytes, apierr.RateLimited, 2 * time.Second, bytesMsg},
		{"full, queue rate", fullProject | queueRate, false, StepFullProject, apierr.RateLimited, 3 * time.Second, "over this queue's limit of 3000 send requests a second"},
		{"full", fullProject, false, StepFullProject, apierr.QuotaExceeded, 0, fmt.Sprintf("the send would take the project's stored bytes past its limit of %d bytes "+
			"(maxStoredBytes); consume or purge messages first", tenancy.Defaults.MaxStoredBytes)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false, Config{})
			f.refuse(c.refuse)
			adm, err := f.svc.AdmitSend(t.Context(), SendRequest{Project: f.project, Queue: &f.q, Bytes: 1000, Counted: c.counted})
			var ae *apierr.Error
			if !errors.As(err, &ae) {
				t.Fatalf("admitted (%v), want %s refused", err, c.code)
			}
			if adm.Refused != c.step || ae.Code != c.code || ae.RetryAfter != c.retry || ae.Message != c.message {
				t.Fatalf("refused at step %d: %s %q retry %s; want step %d: %s %q retry %s",
					adm.Refused, ae.Code, ae.Message, ae.RetryAfter, c.step, c.code, c.message, c.retry)
			}
		})
	}
}

// TestAdmitSendAdmits: with nothing to refuse, AdmitSend asks the request rate and then the
// send bytes, meters the request, and leaves the queue's send rate to Send (a project not
// marked full pays no stored-bytes read).
func TestAdmitSendAdmits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false, Config{})
	adm, err := f.svc.AdmitSend(t.Context(), SendRequest{Project: f.project, Queue: &f.q, Bytes: 10})
	if err != nil || adm.Refused != StepNone {
		t.Fatalf("refused at %d: %v", adm.Refused, err)
	}
	want := []string{tenancy.RateKey(f.project), tenancy.ByteRateKey(f.project)}
	if got := f.lim.keys(); !slices.Equal(got, want) {
		t.Fatalf("limits asked %q, want %q", got, want)
	}
	if got := f.usage(t); got != (meta.Counters{Requests: 1}) {
		t.Fatalf("metered %+v, want one request", got)
	}
}

// TestAdmitSendLateBytes: a body of unknown size (chunked) is charged once read, once only,
// and a refusal then names the send-bytes step.
func TestAdmitSendLateBytes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false, Config{})
	adm, err := f.svc.AdmitSend(t.Context(), SendRequest{Project: f.project, Queue: &f.q, Bytes: -1, Counted: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.lim.keys(); len(got) != 0 {
		t.Fatalf("limits asked %q before the body's size was known", got)
	}
	f.lim.refuse(tenancy.ByteRateKey(f.project), time.Second)
	if err := adm.ChargeRead(t.Context(), 500); apierr.CodeOf(err) != apierr.RateLimited || adm.Refused != StepSendBytes {
		t.Fatalf("charged the read: %v (step %d), want rate_limited at the send bytes", err, adm.Refused)
	}
	if err := adm.ChargeRead(t.Context(), 500); err != nil {
		t.Fatalf("charged twice: %v", err)
	}
	if got := f.lim.keys(); len(got) != 1 {
		t.Fatalf("limits asked %q, want the send bytes once", got)
	}
}

// TestSendQueueRate: Send refuses a send over the queue's rate with the limiter's wait as
// Retry-After, and stores nothing.
func TestSendQueueRate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, Config{})
	f.lim.refuse(rediskeys.QueueRate(f.q.ID, "send"), 1500*time.Millisecond)
	_, err := f.svc.Send(t.Context(), f.q, []engine.Message{{Body: "x"}})
	ae := apierr.As(err)
	if ae.Code != apierr.RateLimited || ae.RetryAfter != 1500*time.Millisecond || ae.Message != "over this queue's limit of 3000 send requests a second" {
		t.Fatalf("sent over the queue's rate: %v (retry %s)", err, ae.RetryAfter)
	}
	st, err := f.svc.Stats(t.Context(), f.q)
	if err != nil || st.Visible != 0 {
		t.Fatalf("stats %+v, %v: want nothing stored", st, err)
	}
}

// TestStoredBytesRefusal: a send past the project's maxStoredBytes is the engine's refusal;
// noted, it marks the project full, so the next send is refused before its body is decoded
// until the limit leaves room again.
func TestStoredBytesRefusal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, Config{})
	ctx := t.Context()
	if _, err := f.svc.Send(ctx, f.q, []engine.Message{{Body: "first"}}); err != nil {
		t.Fatal(err)
	}
	stored, err := f.svc.cfg.Engine.StoredBytes(ctx, f.project)
	if err != nil || stored <= 0 {
		t.Fatalf("stored %d, %v", stored, err)
	}
	f.setLimits(t, map[string]int64{meta.LimitMaxStoredBytes: stored})
	adm, err := f.svc.AdmitSend(ctx, SendRequest{Project: f.project, Queue: &f.q, Bytes: 10})
	if err != nil {
		t.Fatalf("refused before any send was: %v", err)
	}
	_, err = f.svc.Send(ctx, f.q, []engine.Message{{Body: "second"}})
	if ae := AsAPI(err); !errors.Is(err, engine.ErrStoredBytesExceeded) || ae.Code != apierr.QuotaExceeded || ae.Details["limit"] != meta.LimitMaxStoredBytes {
		t.Fatalf("sent past maxStoredBytes: %v", err)
	}
	adm.NoteErr(err)
	adm, err = f.svc.AdmitSend(ctx, SendRequest{Project: f.project, Queue: &f.q, Bytes: 10})
	if adm.Refused != StepFullProject || apierr.CodeOf(err) != apierr.QuotaExceeded {
		t.Fatalf("a full project's send: step %d, %v; want refused full", adm.Refused, err)
	}
	f.setLimits(t, map[string]int64{meta.LimitMaxStoredBytes: 2 * stored})
	if _, err := f.svc.AdmitSend(ctx, SendRequest{Project: f.project, Queue: &f.q, Bytes: 10}); err != nil {
		t.Fatalf("refused with room again: %v", err)
	}
}

// TestAdmitSendMeters: an admitted send meters its request, and once answered its stored
// messages and their bytes; a refused send meters nothing.
func TestAdmitSendMeters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, Config{})
	ctx := t.Context()
	msgs := []engine.Message{{Body: "abc"}, {Body: "de", Attributes: map[string]string{"k": "v"}}}
	adm, err := f.svc.AdmitSend(ctx, SendRequest{Project: f.project, Queue: &f.q, Bytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Send(ctx, f.q, msgs)
	if err != nil {
		t.Fatal(err)
	}
	adm.MeterSent(msgs, res)
	f.lim.refuse(tenancy.RateKey(f.project), time.Second)
	if _, err := f.svc.AdmitSend(ctx, SendRequest{Project: f.project, Queue: &f.q, Bytes: 100}); err == nil {
		t.Fatal("admitted over the request rate")
	}
	want := meta.Counters{Requests: 1, MessagesSent: 2, BytesIn: 3 + 2 + 2}
	if got := f.usage(t); got != want {
		t.Fatalf("metered %+v, want %+v", got, want)
	}
}

// TestMeterPublished: a publish counts one messagesPublished and its payload in bytesIn per
// appended message; a fifo duplicate appends nothing and counts nothing.
func TestMeterPublished(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false, Config{})
	adm, err := f.svc.AdmitSend(t.Context(), SendRequest{Project: f.project, Bytes: 100, Counted: true})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []engine.PublishMessage{{Message: engine.Message{Body: "abc"}},
		{Message: engine.Message{Body: "de", Attributes: map[string]string{"k": "v"}}}, {Message: engine.Message{Body: "again"}}}
	res := []engine.PublishResult{{MessageID: ids.New(), Sequence: 1}, {MessageID: ids.New(), Sequence: 2}, {MessageID: ids.New(), Sequence: 1, Duplicate: true}}
	adm.MeterPublished(msgs, res)
	if got, want := f.usage(t), (meta.Counters{MessagesPublished: 2, BytesIn: 3 + 2 + 2}); got != want {
		t.Fatalf("metered %+v, want %+v", got, want)
	}
}
