package api

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The fast paths answer exactly what encoding/json answers whenever they answer at all.
func FuzzFastDecode(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"body":"hi","attributes":{"a":"b"},"delaySeconds":3}]}`, `{}`, ` { "a" : 1 , "b":[1,{"c":"}"}] } `,
		`{"a":"x\"y","a":2}`, `[1, "two", {"three":[3]}, null, true, -1.5e3]`, `[]`, `[ ]`, `{"k\u0061":1}`, `{"é":1}`,
		`{"a":1}x`, `{"a":1} {}`, `null`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":[}`, `{"":""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if fields, ok := fastObject(data, false); ok {
			var std map[string]json.RawMessage
			dec := json.NewDecoder(bytes.NewReader(data))
			if err := dec.Decode(&std); err != nil || std == nil || dec.More() {
				t.Fatalf("fast path took %q, encoding/json refuses it (%v)", data, err)
			}
			if len(std) != len(fields) {
				t.Fatalf("%q: %d fields, encoding/json %d", data, len(fields), len(std))
			}
			for k, v := range std {
				if !bytes.Equal(fields[k], v) {
					t.Fatalf("%q: field %q = %s, encoding/json %s", data, k, fields[k], v)
				}
			}
		}
		if items, ok := fastArray(data, false); ok {
			var std []json.RawMessage
			if err := json.Unmarshal(data, &std); err != nil || std == nil {
				t.Fatalf("fast path took %q, encoding/json refuses it (%v)", data, err)
			}
			if len(std) != len(items) {
				t.Fatalf("%q: %d items, encoding/json %d", data, len(items), len(std))
			}
			for i := range std {
				if !bytes.Equal(items[i], std[i]) {
					t.Fatalf("%q: item %d = %s, encoding/json %s", data, i, items[i], std[i])
				}
			}
		}
	})
}
