package redisengine

import (
	"regexp"
	"slices"
	"testing"

	"github.com/queueshq/queues/pkg/engine"
)

// TestPreludeReservedNames: psize (scripts/prelude.lua) leaves out exactly the engine's
// reserved attributes, so the stored bytes the scripts count are engine.PayloadBytes (the
// conformance suite's StoredBytesReserved checks the counts; this names a new reserved
// attribute the prelude does not know yet).
func TestPreludeReservedNames(t *testing.T) {
	src, err := scriptFiles.ReadFile("scripts/prelude.lua")
	if err != nil {
		t.Fatal(err)
	}
	table := regexp.MustCompile(`(?m)^local RESERVED = \{(.*)\}$`).FindSubmatch(src)
	if table == nil {
		t.Fatal("prelude.lua: no RESERVED table")
	}
	var got []string
	for _, m := range regexp.MustCompile(`\['([^']*)'\] = true`).FindAllSubmatch(table[1], -1) {
		got = append(got, string(m[1]))
	}
	want := []string{engine.ReplayOfAttribute, engine.TraceparentAttribute}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("prelude.lua RESERVED = %v, want the engine's reserved attributes %v", got, want)
	}
	for _, name := range want {
		if engine.PayloadBytes("", map[string]string{name: "x"}) != 0 {
			t.Fatalf("engine.PayloadBytes counts %s", name)
		}
	}
}
