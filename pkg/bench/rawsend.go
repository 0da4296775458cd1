package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The raw client's send and receive-and-acknowledge requests, and the body header every
// message carries (its sequence number and send time).

// header writes the body header: sequence number and send time.
func appendHeader(b []byte, seq int64, at time.Time) []byte {
	b = appendPadded(b, seq, 10)
	b = append(b, ' ')
	b = appendPadded(b, at.UnixNano(), 19)
	return append(b, ' ')
}

func appendPadded(b []byte, n int64, width int) []byte {
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], n, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func parseHeader(body string) (seq, sentAt int64, ok bool) {
	if len(body) < headerLen || body[10] != ' ' || body[30] != ' ' {
		return 0, 0, false
	}
	seq, err1 := strconv.ParseInt(body[:10], 10, 64)
	sentAt, err2 := strconv.ParseInt(body[11:30], 10, 64)
	return seq, sentAt, err1 == nil && err2 == nil
}

// sender builds send request bodies into a reused buffer.
type sender struct {
	r       *runner
	buf     []byte
	padding string
	group   int
}

func (r *runner) newSender(worker int) *sender {
	pad := make([]byte, r.cfg.Size-headerLen)
	for i := range pad {
		pad[i] = 'x'
	}
	return &sender{r: r, padding: string(pad), group: worker}
}

// send sends the messages numbered [first, first+n) to queue in one request.
func (s *sender) send(ctx context.Context, st *stats, queue string, first int64, n int) error {
	return s.sendTo(ctx, st, queuePath(queue)+"/messages", first, n)
}

// sendTo posts the messages numbered [first, first+n) to path (a queue's send or a topic's
// publish: they take and answer the same shape) in one request.
func (s *sender) sendTo(ctx context.Context, st *stats, path string, first int64, n int) error {
	now := time.Now()
	b := append(s.buf[:0], `{"messages":[`...)
	group := ""
	if s.r.cfg.QueueType == "fifo" {
		group = "g" + strconv.Itoa(s.group%s.r.cfg.Groups)
		s.group++
	}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"body":"`...)
		b = appendHeader(b, first+int64(i), now)
		b = append(b, s.padding...)
		b = append(b, '"')
		if group != "" {
			b = append(b, `,"groupId":`...)
			b = appendJSONString(b, group)
		}
		b = append(b, '}')
	}
	b = append(b, `]}`...)
	s.buf = b
	var resp sendResp
	err := s.r.c.do(ctx, http.MethodPost, path, b, true, &resp)
	st.request("send", time.Since(now))
	if err != nil {
		return err
	}
	if len(resp.Failed) > 0 {
		return fmt.Errorf("send refused %d of %d messages: %s", len(resp.Failed), n, resp.Failed[0])
	}
	if len(resp.Messages) != n {
		return fmt.Errorf("send answered %d results for %d messages", len(resp.Messages), n)
	}
	st.sent.Add(int64(n))
	return nil
}

// consumer receives and acknowledges.
type consumer struct {
	r    *runner
	rbuf []byte
	abuf []byte
}

// once receives up to batch messages (waiting up to wait seconds) and acknowledges them in
// one request. It returns how many were delivered.
func (cs *consumer) once(ctx context.Context, st *stats, queue string, max, wait int, route string) (int, error) {
	cs.rbuf = fmt.Appendf(cs.rbuf[:0], `{"maxMessages":%d,"waitSeconds":%d}`, max, wait)
	t0 := time.Now()
	var resp receiveResp
	err := cs.r.c.do(ctx, http.MethodPost, queuePath(queue)+"/receive", cs.rbuf, true, &resp)
	now := time.Now()
	if err != nil {
		return 0, err
	}
	st.request(route, now.Sub(t0))
	if len(resp.Messages) == 0 {
		return 0, nil
	}
	b := append(cs.abuf[:0], `{"receiptHandles":[`...)
	for i, m := range resp.Messages {
		if !st.deliver(m.Body, now) {
			return 0, fmt.Errorf("received a message the generator did not send: %.40q", m.Body)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, m.ReceiptHandle)
	}
	b = append(b, `]}`...)
	cs.abuf = b
	var ar ackResp
	// The ack is not cut short with the phase: a delivered message is always acknowledged.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	t1 := time.Now()
	err = cs.r.c.do(actx, http.MethodPost, "/v1/receipts/ack", b, false, &ar)
	st.request("ack", time.Since(t1))
	if err != nil {
		return 0, err
	}
	if len(ar.Results) != len(resp.Messages) {
		return 0, fmt.Errorf("ack answered %d results for %d handles", len(ar.Results), len(resp.Messages))
	}
	for _, res := range ar.Results {
		if res.Error != nil {
			return 0, fmt.Errorf("ack failed: %s", res.Error.Code)
		}
	}
	st.acked.Add(int64(len(resp.Messages)))
	return len(resp.Messages), nil
}
