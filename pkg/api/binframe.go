package api

import (
	"encoding/binary"
	"strconv"

	"github.com/queueshq/queues/pkg/apierr"
)

// The receive stream's binary encoding (?encoding=binary, docs/streaming.md "Binary
// batches"): a batch as one binary WebSocket frame, written without reflection or JSON
// escaping. Every other frame of the stream stays JSON text. The layout, all lengths and
// counts unsigned varints (encoding/binary's Uvarint):
//
//	frame   = 0x01 count message*
//	message = str(messageId) str(body) str(receiptHandle) str(sentAt) str(visibilityDeadline)
//	          str(groupId) str(sequenceNumber) str(traceparent) uvarint(receiveCount)
//	          priority attrs flags [str(sourceQueue) str(reason) str(at)] [str(topic) uvarint(sequence)]
//	str     = uvarint(len) bytes
//	priority= 0xff (none: fifo queues) | 0..9
//	attrs   = uvarint(n) (str(name) str(value))*
//	flags   = bit 0: a deadLetter follows; bit 1: a replayOf follows
//
// Strings are the JSON answer's values unescaped (times in its RFC 3339 form; "" where the
// JSON leaves the field out).

// binBatch is the first byte of a binary batch frame.
const binBatch = 0x01

// appendReceiveBinary appends out as a binary batch frame.
func appendReceiveBinary(b []byte, out []receivedJSON) []byte {
	b = append(b, binBatch)
	b = binary.AppendUvarint(b, uint64(len(out)))
	for i := range out {
		m := &out[i]
		for _, s := range [...]string{m.MessageID, m.Body, m.ReceiptHandle, m.SentAt, m.VisibilityDeadline, m.GroupID, m.SequenceNumber, m.Traceparent} {
			b = appendBinString(b, s)
		}
		b = binary.AppendUvarint(b, uint64(m.ReceiveCount))
		if m.Priority == nil {
			b = append(b, 0xff)
		} else {
			b = append(b, byte(*m.Priority))
		}
		b = binary.AppendUvarint(b, uint64(len(m.Attributes)))
		for k, v := range m.Attributes {
			b = appendBinString(appendBinString(b, k), v)
		}
		var flags byte
		if m.DeadLetter != nil {
			flags |= 1
		}
		if m.ReplayOf != nil {
			flags |= 2
		}
		b = append(b, flags)
		if d := m.DeadLetter; d != nil {
			b = appendBinString(appendBinString(appendBinString(b, d.SourceQueue), d.Reason), d.At)
		}
		if r := m.ReplayOf; r != nil {
			b = binary.AppendUvarint(appendBinString(b, r.Topic), r.Sequence)
		}
	}
	return b
}

func appendBinString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// streamEncoding reads the receive stream's encoding parameter: json (default) or binary.
func streamEncoding(v string) (bin bool, err error) {
	switch v {
	case "", "json":
		return false, nil
	case "binary":
		return true, nil
	}
	return false, apierr.Invalid("encoding", "must be json or binary, not %s", strconv.Quote(v))
}
