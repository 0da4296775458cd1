package service

import (
	"context"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// SendRequest is one send to admit: a /v1 send (POST .../messages, one message or a batch),
// a send stream's frame, the SQS door's SendMessage or SendMessageBatch, or a topic publish.
type SendRequest struct {
	// Project is the sending project.
	Project ids.ID
	// Queue is the queue sent to; nil for a publish, or for a door that admits before it has
	// looked the queue up (the SQS door), which leaves a full project to the engine's refusal.
	Queue *meta.Queue
	// Bytes is the request's size; < 0 when it is not known before the body is read (a
	// chunked body): AdmittedSend.ChargeRead charges it then.
	Bytes int64
	// Counted says the door's per-call admission already applied the project's request rate
	// to this request (/v1's authentication middleware, the SQS door's dispatch). A send
	// stream's frame is a request of its own and is not counted there.
	Counted bool
}

// SendStep names a step of a send's admission, so a door can tell which one refused.
type SendStep uint8

// The steps of AdmitSend, in the order it takes them.
const (
	StepNone        SendStep = iota // admitted
	StepRequestRate                 // the project's requestsPerSecond
	StepSendBytes                   // the project's sendBytesPerSecond
	StepFullProject                 // the project is at its maxStoredBytes
)

// AdmittedSend is a send AdmitSend answered: the rest of its chain (bytes read late, the
// full project's mark, metering) goes through it.
type AdmittedSend struct {
	a       *Admission
	req     SendRequest
	charged bool
	// Refused is the step that refused the send, StepNone when it was admitted.
	Refused SendStep
}

// AdmitSend is the one admission of every send, whichever door it came through, in one
// fixed order (docs/tenancy.md#order-on-a-send):
//
//  1. the project's request rate, unless the door counted the request (req.Counted);
//  2. the project's send bytes (req.Bytes, when known before the body is read);
//  3. a full project's refusal, before the body is decoded (req.Queue given; it applies
//     the queue's send rate first, as every send does).
//
// The steps that need the decoded messages follow in Send (the queue's send rate, then the
// project's maxStoredBytes in the engine's call) and the door's publish; the admitted send's
// MeterSent or MeterPublished meters it once the door's answer is written. A refusal is an
// *apierr.Error for the door to word; AdmittedSend.Refused names its step.
func (s *Admission) AdmitSend(ctx context.Context, req SendRequest) (*AdmittedSend, error) {
	as := &AdmittedSend{a: s, req: req}
	if !req.Counted {
		if err := s.Admit(ctx, req.Project); err != nil {
			as.Refused = StepRequestRate
			return as, err
		}
	}
	if req.Bytes >= 0 {
		as.charged = true
		if err := s.admitSendBytes(ctx, req.Project, req.Bytes); err != nil {
			as.Refused = StepSendBytes
			return as, err
		}
	}
	if req.Queue != nil {
		if err := s.refuseWhileFull(ctx, *req.Queue); err != nil {
			as.Refused = StepFullProject
			return as, err
		}
	}
	return as, nil
}

// ChargeRead charges the n bytes of a body whose size was not known when the send was
// admitted (nothing when it was).
func (as *AdmittedSend) ChargeRead(ctx context.Context, n int64) error {
	if as.charged {
		return nil
	}
	as.charged = true
	if err := as.a.admitSendBytes(ctx, as.req.Project, n); err != nil {
		as.Refused = StepSendBytes
		return err
	}
	return nil
}

// NoteErr marks the queue's project full when err (the send's) is a maxStoredBytes refusal,
// so the project's next sends are refused before their bodies are decoded.
func (as *AdmittedSend) NoteErr(err error) {
	if as.req.Queue != nil {
		as.a.noteSendErr(*as.req.Queue, err)
	}
}

// MeterSent meters the send's stored messages (not duplicates), once the answer is written.
func (as *AdmittedSend) MeterSent(msgs []engine.Message, res []engine.SendResult) {
	as.a.meterSent(as.req.Project, msgs, res)
}

// MeterPublished meters a publish's appended messages (not duplicates), once the answer is
// written.
func (as *AdmittedSend) MeterPublished(msgs []engine.PublishMessage, res []engine.PublishResult) {
	as.a.meterPublished(as.req.Project, msgs, res)
}

// meterPublished meters a publish's appended messages and their bytes to the project
// (duplicates append nothing); the fan-out meters each copy into a queue as a send.
func (s *Admission) meterPublished(project ids.ID, msgs []engine.PublishMessage, res []engine.PublishResult) {
	var c meta.Counters
	for i, r := range res {
		if !r.Duplicate && i < len(msgs) {
			c.MessagesPublished++
			c.BytesIn += PayloadSize(msgs[i].Body, msgs[i].Attributes)
		}
	}
	if !c.IsZero() {
		s.cfg.Meter.Add(project, c)
	}
}
