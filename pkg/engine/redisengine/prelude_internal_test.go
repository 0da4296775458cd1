package redisengine

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

func TestParsePreludeKeepsEveryLine(t *testing.T) {
	raw, err := scriptFiles.ReadFile("scripts/prelude.lua")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, d := range preludeDefs {
		all = append(all, d.names...)
	}
	// Asked for every name, the prelude comes back whole (trailing comment lines aside).
	got := preludeFor(preludeDefs, strings.Join(all, " "))
	want := strings.TrimRight(string(raw), "\n")
	if !strings.HasPrefix(want, strings.TrimRight(got, "\n")) || len(got) < len(want)*9/10 {
		t.Fatalf("the definitions do not add up to prelude.lua: %d of %d bytes", len(got), len(want))
	}
	for _, n := range []string{"mstate", "mparse", "bchg", "BAND", "BK", "PK", "PJ", "RESERVED", "bump"} {
		if !slices.Contains(all, n) {
			t.Errorf("definition %s not found among %v", n, all)
		}
	}
}

// Every script gets every helper it uses, however indirectly: a missing one would fail only
// when the path using it runs (Redis refuses a nonexistent global at run time).
func TestPreludeForGivesEveryUsedHelper(t *testing.T) {
	defined := map[string]bool{}
	for _, d := range preludeDefs {
		for _, n := range d.names {
			defined[n] = true
		}
	}
	files, err := fs.Glob(scriptFiles, "scripts/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == "scripts/prelude.lua" {
			continue
		}
		body, err := scriptFiles.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		part := preludeFor(preludeDefs, string(body))
		have := map[string]bool{}
		for _, d := range parsePrelude(part) {
			for _, n := range d.names {
				have[n] = true
			}
		}
		for id := range identifiers(part + "\n" + string(body)) {
			if defined[id] && !have[id] {
				t.Errorf("%s uses %s, which its prelude leaves out", f, id)
			}
		}
	}
}

func TestPreludeForLeavesOutWhatIsNotUsed(t *testing.T) {
	part := preludeFor(preludeDefs, "return bump(KEYS[1], 1)")
	if !strings.Contains(part, "local function bump") {
		t.Fatal("bump left out")
	}
	for _, n := range []string{"local function gpark", "local function fmatch", "local function mstate"} {
		if strings.Contains(part, n) {
			t.Errorf("%q carried by a script that does not use it", n)
		}
	}
}
