package filter

import (
	"slices"
	"strconv"
	"testing"
)

func TestWakeDigests(t *testing.T) {
	if d := WakeDigests(nil, map[string]string{}); d == nil || len(d) != 0 {
		t.Fatalf("no attributes: %v, want empty and not nil (wakes no filtered receive)", d)
	}
	d := WakeDigests(map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1"})
	if len(d) != 2 || !slices.IsSorted(d) {
		t.Fatalf("digests %v, want 2 distinct, sorted", d)
	}
	if Digest("ab", "c") == Digest("a", "bc") {
		t.Fatal("the name's length must separate name and value")
	}
	var many []map[string]string
	for i := range MaxWakeDigests + 1 {
		many = append(many, map[string]string{"k": strconv.Itoa(i)})
	}
	if WakeDigests(many...) != nil || MergeWakeDigests(WakeDigests(many[:MaxWakeDigests]...), WakeDigests(many[MaxWakeDigests:]...)) != nil {
		t.Fatal("more than MaxWakeDigests pairs must name none")
	}
	if MergeWakeDigests(d, nil) != nil {
		t.Fatal("merging a wake-up that names none must name none")
	}
}
