package receipt

import (
	"encoding/base64"
	"testing"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/signingkeys"
)

func ring(t testing.TB, id string) *signingkeys.Ring {
	r, err := signingkeys.Generate(id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func signer(r *signingkeys.Ring, verify ...*signingkeys.Ring) *Signer {
	all := []signingkeys.Key{r.Signing()}
	for _, v := range verify {
		all = append(all, v.Signing())
	}
	joined, err := signingkeys.New(all...)
	if err != nil {
		panic(err)
	}
	return NewSigner(joined)
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s := signer(ring(t, "k1"))
	d := engine.Delivery{Queue: ids.New(), Partition: 63, MessageID: ids.New(), Attempt: 7}
	h := s.Sign(d)
	got, err := s.Verify(h, "receiptHandle")
	if err != nil || got != d {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, d)
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	old, cur := ring(t, "old"), ring(t, "new")
	h := signer(old).Sign(engine.Delivery{Queue: ids.New(), MessageID: ids.New(), Attempt: 1})
	if _, err := signer(cur, old).Verify(h, "x"); err != nil {
		t.Fatalf("a handle of a retired-but-listed key failed: %v", err)
	}
	if _, err := signer(cur).Verify(h, "x"); apierr.CodeOf(err) != apierr.ReceiptHandleInvalid {
		t.Fatalf("a handle of an unlisted key: %v", err)
	}
}

func TestTamper(t *testing.T) {
	t.Parallel()
	s := signer(ring(t, "k1"))
	h := s.Sign(engine.Delivery{Queue: ids.New(), MessageID: ids.New(), Attempt: 1})
	raw, _ := base64.RawURLEncoding.DecodeString(h)
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 1
		if _, err := s.Verify(base64.RawURLEncoding.EncodeToString(b), "f"); apierr.CodeOf(err) != apierr.ReceiptHandleInvalid {
			t.Fatalf("flipping byte %d: %v", i, err)
		}
	}
	for _, bad := range []string{"", h[:len(h)-1], h + "A", "!!!!", h[:10]} {
		if _, err := s.Verify(bad, "f"); apierr.CodeOf(err) != apierr.ReceiptHandleInvalid {
			t.Fatalf("Verify(%q): %v", bad, err)
		}
	}
	// Re-signed with another key under the same id.
	other := signer(func() *signingkeys.Ring {
		r, _ := signingkeys.New(signingkeys.Key{ID: "k1", Secret: make([]byte, 32)})
		return r
	}())
	forged := other.Sign(engine.Delivery{Queue: ids.New(), MessageID: ids.New(), Attempt: 1})
	if _, err := s.Verify(forged, "f"); apierr.CodeOf(err) != apierr.ReceiptHandleInvalid {
		t.Fatalf("re-signed handle accepted: %v", err)
	}
}

func FuzzVerify(f *testing.F) {
	s := signer(ring(f, "k1"))
	f.Add(s.Sign(engine.Delivery{Queue: ids.New(), MessageID: ids.New(), Attempt: 3}))
	f.Add("")
	f.Add("AQJrMQ")
	f.Fuzz(func(t *testing.T, h string) {
		d, err := s.Verify(h, "receiptHandle")
		if err != nil {
			if apierr.CodeOf(err) != apierr.ReceiptHandleInvalid {
				t.Fatalf("unexpected error kind %v", err)
			}
			return
		}
		if s.Sign(d) != h {
			t.Fatalf("accepted a non-canonical handle %q", h)
		}
	})
}

func BenchmarkSignVerify(b *testing.B) {
	ring, err := signingkeys.Generate("bench")
	if err != nil {
		b.Fatal(err)
	}
	s := NewSigner(ring)
	d := engine.Delivery{Queue: ids.New(), Partition: 3, MessageID: ids.New(), Attempt: 2}
	b.ReportAllocs()
	for b.Loop() {
		h := s.Sign(d)
		if _, err := s.Verify(h, "receiptHandle"); err != nil {
			b.Fatal(err)
		}
	}
}

// A consumer's delivery carries its tag (version 2), and a v2 handle whose tag is flipped or
// cut off fails like any tampered handle, so no one can move a delivery to another consumer.
func TestConsumerTagRoundTrip(t *testing.T) {
	t.Parallel()
	s := signer(ring(t, "k1"))
	d := engine.Delivery{Queue: ids.New(), Partition: 3, MessageID: ids.New(), Attempt: 2, Consumer: engine.TagOf("worker-7")}
	h := s.Sign(d)
	got, err := s.Verify(h, "receiptHandle")
	if err != nil || got != d {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, d)
	}
	if len(h) > MaxLen {
		t.Fatalf("a consumer's handle is %d characters, over MaxLen %d", len(h), MaxLen)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(h)
	raw[len(raw)-macLen-1] ^= 1
	if _, err := s.Verify(base64.RawURLEncoding.EncodeToString(raw), "x"); apierr.CodeOf(err) != apierr.ReceiptHandleInvalid {
		t.Fatalf("a flipped tag: %v", err)
	}
	plain := s.Sign(engine.Delivery{Queue: d.Queue, MessageID: d.MessageID, Attempt: 2})
	if got, err := s.Verify(plain, "x"); err != nil || got.Consumer != 0 {
		t.Fatalf("a handle without a consumer: %+v, %v", got, err)
	}
}
