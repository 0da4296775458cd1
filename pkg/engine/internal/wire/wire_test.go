package wire

import (
	"bytes"
	"encoding/binary"
	"maps"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

type record struct {
	s     string
	n     uint64
	i     int64
	attrs map[string]string
	dl    *engine.DeadLetterInfo
}

func encode(r record) []byte {
	b := []byte{7}
	b = AppendString(b, r.s)
	b = binary.AppendUvarint(b, r.n)
	b = binary.AppendVarint(b, r.i)
	b = AppendAttributes(b, r.attrs)
	return AppendDeadLetter(b, r.dl)
}

func decode[S string | []byte](s S) (record, bool) {
	r := NewReader(s)
	var rec record
	if r.Byte() != 7 {
		return rec, false
	}
	rec.s, rec.n, rec.i = r.String(), r.Uvarint(), r.Varint()
	rec.attrs = r.Attributes()
	rec.dl = r.DeadLetter()
	return rec, r.Done()
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	recs := []record{
		{dl: &engine.DeadLetterInfo{At: time.UnixMilli(0).UTC()}},
		{s: "héllo", n: 1 << 63, i: -1 << 62, attrs: map[string]string{"b": "2", "a": "", "c": "33"},
			dl: &engine.DeadLetterInfo{SourceQueue: [16]byte{1, 2, 3, 15: 9}, Reason: "too many receives", At: time.UnixMilli(-5).UTC()}},
	}
	for _, want := range recs {
		b := encode(want)
		for name, dec := range map[string]func() (record, bool){
			"bytes":  func() (record, bool) { return decode(b) },
			"string": func() (record, bool) { return decode(string(b)) },
		} {
			got, ok := dec()
			if !ok || got.s != want.s || got.n != want.n || got.i != want.i || !maps.Equal(got.attrs, want.attrs) ||
				(len(want.attrs) == 0) != (got.attrs == nil) || *got.dl != *want.dl {
				t.Fatalf("%s: decode(encode(%+v)) = %+v, %v", name, want, got, ok)
			}
		}
		// Strict: every truncation and any trailing byte fail.
		for i := range b {
			if _, ok := decode(b[:i]); ok {
				t.Fatalf("truncated to %d bytes decoded", i)
			}
		}
		if _, ok := decode(append(bytes.Clone(b), 0)); ok {
			t.Fatal("trailing byte decoded")
		}
	}
}

func TestAttributesSortedAndBounded(t *testing.T) {
	t.Parallel()
	a := AppendAttributes(nil, map[string]string{"z": "1", "a": "2"})
	if want := []byte{2, 1, 'a', 1, '2', 1, 'z', 1, '1'}; !bytes.Equal(a, want) {
		t.Fatalf("AppendAttributes = %v, want %v", a, want)
	}
	r := NewReader(binary.AppendUvarint(nil, engine.MaxAttributes*4+1))
	if r.Attributes() != nil || r.OK() {
		t.Fatal("too many attributes read")
	}
}
