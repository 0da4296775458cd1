package redisengine

import (
	"regexp"
	"strings"
)

// Redis runs a script's whole text on every call, so each helper of prelude.lua a script
// carries is a closure made again per call: the full prelude cost about as much as a send of
// ten messages does itself. A script is therefore given only the definitions its body uses,
// directly or through another definition, in the prelude's order (a helper sees only the
// ones above it, as in the full prelude).

var (
	// identRe matches Lua identifiers. Reading them from string literals and comment tails too
	// only ever includes a definition that is not needed, never leaves one out.
	identRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	// defRe matches the first line of a top-level definition of prelude.lua: "local function
	// name(" or "local a, b = ...".
	defRe = regexp.MustCompile(`^local\s+(?:function\s+([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_, ]*?)\s*=)`)
)

// preludeDef is one top-level definition of the prelude with the comment lines above it.
type preludeDef struct {
	names []string
	text  string
	uses  map[string]bool
}

// parsePrelude splits the prelude into its top-level definitions; every top-level line of it
// is a comment, a definition's first line ("local …"), or part of the definition above.
func parsePrelude(prelude string) []preludeDef {
	var defs []preludeDef
	var pending strings.Builder // comment lines waiting for the definition they describe
	for line := range strings.Lines(prelude) {
		m := defRe.FindStringSubmatch(line)
		if m == nil && strings.HasPrefix(line, "local") {
			panic("prelude.lua: a top-level line this loader cannot read: " + line)
		}
		switch {
		case m != nil:
			names := []string{m[1]}
			if m[1] == "" {
				names = strings.Split(strings.ReplaceAll(m[2], " ", ""), ",")
			}
			defs = append(defs, preludeDef{names: names, text: pending.String() + line})
			pending.Reset()
		case strings.HasPrefix(line, "--") || len(defs) == 0:
			pending.WriteString(line)
		default:
			defs[len(defs)-1].text += line
		}
	}
	for i := range defs {
		defs[i].uses = identifiers(defs[i].text)
	}
	return defs
}

// identifiers is the set of identifiers in src, whole-line comments left out.
func identifiers(src string) map[string]bool {
	set := map[string]bool{}
	for line := range strings.Lines(src) {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		for _, id := range identRe.FindAllString(line, -1) {
			set[id] = true
		}
	}
	return set
}

// preludeFor is the part of the prelude that body needs: every definition whose name body
// uses, and what those use in turn.
func preludeFor(defs []preludeDef, body string) string {
	need := identifiers(body)
	keep := make([]bool, len(defs))
	// A definition only uses ones above it, so one pass from the bottom up closes the set.
	for i := len(defs) - 1; i >= 0; i-- {
		for _, n := range defs[i].names {
			if need[n] {
				keep[i] = true
			}
		}
		if keep[i] {
			for id := range defs[i].uses {
				need[id] = true
			}
		}
	}
	var b strings.Builder
	for i, d := range defs {
		if keep[i] {
			b.WriteString(d.text)
		}
	}
	return b.String()
}
