// Package receipt encodes and verifies receipt handles. A handle is the credential for one
// delivery of one message: it names the queue, partition, message and delivery attempt and is
// signed with HMAC-SHA256 under a key id, so it is checked without any storage round trip and
// keys rotate without invalidating live handles.
//
// Layout before base64url (no padding):
//
//	version(1)=1 | len(kid)(1) | kid | queue(16) | partition(1) | message(16) | attempt(4, BE) | mac(16)
//
// A delivery to a named consumer (docs/delivery-options.md#consumers-backlogs-and-fairness) is
// version 2, which adds its consumer tag before the mac, so that settling it updates that
// consumer's holdings:
//
//	version(1)=2 | len(kid)(1) | kid | queue(16) | partition(1) | message(16) | attempt(4, BE) | consumer tag(8, BE) | mac(16)
//
// mac is the first 16 bytes of HMAC-SHA256(receipt key of kid, everything before it).
package receipt

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/signingkeys"
)

const (
	version       = 1
	versionTagged = 2
	macLen        = 16
	tagLen        = 8
	// MaxLen bounds an encoded handle; longer input is rejected before decoding.
	MaxLen = 128
)

// Signer makes and checks handles with a key ring.
type Signer struct {
	ring    *signingkeys.Ring
	derived map[string][]byte
	// macs keeps keyed HMAC states per key id for reuse (Reset restores the keyed state), so
	// signing the handles of a receive and checking those of an ack allocate none.
	macs map[string]*sync.Pool
}

// NewSigner derives the receipt keys of every key in the ring.
func NewSigner(r *signingkeys.Ring) *Signer {
	s := &Signer{ring: r, derived: map[string][]byte{}, macs: map[string]*sync.Pool{}}
	for _, k := range r.All() {
		key := k.Derive(signingkeys.PurposeReceipt)
		s.derived[k.ID] = key
		s.macs[k.ID] = &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}
	}
	return s
}

// appendMAC appends the first macLen bytes of the HMAC of msg under the receipt key of kid.
func (s *Signer) appendMAC(b []byte, kid string, msg []byte) []byte {
	pool := s.macs[kid]
	h := pool.Get().(hash.Hash)
	h.Reset()
	h.Write(msg)
	var sum [sha256.Size]byte
	out := h.Sum(sum[:0])
	pool.Put(h)
	return append(b, out[:macLen]...)
}

// Sign returns the handle for a delivery.
func (s *Signer) Sign(d engine.Delivery) string {
	k := s.ring.Signing()
	b := make([]byte, 0, 2+len(k.ID)+16+1+16+4+tagLen+macLen)
	v := byte(version)
	if d.Consumer != 0 {
		v = versionTagged
	}
	b = append(b, v, byte(len(k.ID)))
	b = append(b, k.ID...)
	b = append(b, d.Queue[:]...)
	b = append(b, byte(d.Partition))
	b = append(b, d.MessageID[:]...)
	b = binary.BigEndian.AppendUint32(b, d.Attempt)
	if d.Consumer != 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(d.Consumer))
	}
	b = s.appendMAC(b, k.ID, b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Verify decodes and authenticates a handle. Any failure is receipt_handle_invalid naming
// field; it never touches storage.
func (s *Signer) Verify(handle, field string) (engine.Delivery, error) {
	bad := func(why string) (engine.Delivery, error) {
		return engine.Delivery{}, apierr.Field(apierr.ReceiptHandleInvalid, field, "the receipt handle is not valid: %s", why)
	}
	if handle == "" {
		return bad("empty")
	}
	if len(handle) > MaxLen {
		return bad("too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(handle)
	if err != nil {
		return bad("not base64url")
	}
	if len(b) < 2 || (b[0] != version && b[0] != versionTagged) {
		return bad("unknown version")
	}
	kl := int(b[1])
	extra := 0
	if b[0] == versionTagged {
		extra = tagLen
	}
	if len(b) != 2+kl+16+1+16+4+extra+macLen {
		return bad("wrong length")
	}
	kid := string(b[2 : 2+kl])
	if _, ok := s.derived[kid]; !ok {
		return bad("unknown key")
	}
	body, sum := b[:len(b)-macLen], b[len(b)-macLen:]
	var want [macLen]byte
	if !hmac.Equal(sum, s.appendMAC(want[:0], kid, body)) {
		return bad("bad signature")
	}
	p := body[2+kl:]
	var d engine.Delivery
	d.Queue, _ = ids.FromBytes(p[:16])
	d.Partition = int(p[16])
	d.MessageID, _ = ids.FromBytes(p[17:33])
	d.Attempt = binary.BigEndian.Uint32(p[33:37])
	if extra > 0 {
		d.Consumer = engine.ConsumerTag(binary.BigEndian.Uint64(p[37:45]))
	}
	if d.Partition >= engine.MaxPartitions || d.Attempt == 0 || (extra > 0 && d.Consumer == 0) {
		return bad("out of range")
	}
	return d, nil
}
