package signingkeys

import (
	"bytes"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	t.Parallel()
	r, err := Generate("k1")
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(r.String())
	if err != nil {
		t.Fatal(err)
	}
	if back.Signing().ID != "k1" || !bytes.Equal(back.Signing().Secret, r.Signing().Secret) {
		t.Fatalf("round trip lost the key")
	}
	if bytes.Equal(r.Signing().Derive(PurposeToken), r.Signing().Derive(PurposeReceipt)) {
		t.Fatal("derived keys of two purposes are equal")
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "nokey", "k1:!!!", "k1:c2hvcnQ=", "k 1:" + "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=",
		"a:MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=,a:MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) succeeded", s)
		}
	}
}
