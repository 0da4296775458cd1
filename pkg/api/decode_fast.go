package api

import (
	"encoding/json"

	"github.com/queueshq/queues/sdk/go/jsonscan"
)

// Fast paths of parseObject and object.array for the hot routes: one validating pass
// (json.Valid) and one split of the top level into raw values that alias the request body,
// instead of encoding/json's reflective decode (a scan, a copy of every value and a map or
// slice built through reflection, at every level of a send). They answer only when the
// outcome is plain: valid JSON, an object (or array) at the top, keys of printable ASCII
// without escapes. Anything else falls back to the encoding/json path, which words the
// error. decode_fast_test.go checks both paths agree.

// fastObject splits a valid JSON object into its fields; ok is false when the fast path does
// not apply. validated: data is known to be valid JSON (a value the fast path split out of a
// body it checked), so it is not checked again.
func fastObject(data []byte, validated bool) (fields map[string]json.RawMessage, ok bool) {
	i := jsonscan.Space(data, 0)
	if i >= len(data) || data[i] != '{' || !validated && !json.Valid(data) {
		return nil, false
	}
	fields = make(map[string]json.RawMessage, 8)
	i = jsonscan.Space(data, i+1)
	if data[i] == '}' {
		return fields, true
	}
	for {
		// A key: a string of printable ASCII without escapes.
		j := i + 1
		for ; data[j] != '"'; j++ {
			if c := data[j]; c == '\\' || c < 0x20 || c >= 0x7f {
				return nil, false
			}
		}
		key := string(data[i+1 : j])
		i = jsonscan.Space(data, j+1) // at ':'
		i = jsonscan.Space(data, i+1)
		end := jsonscan.Value(data, i)
		if end < 0 {
			return nil, false
		}
		fields[key] = json.RawMessage(data[i:end:end])
		i = jsonscan.Space(data, end)
		if data[i] == '}' {
			return fields, true
		}
		i = jsonscan.Space(data, i+1) // past ','
	}
}

// fastArray splits a valid JSON array into its elements; ok is false when the fast path does
// not apply (validated: as for fastObject).
func fastArray(data []byte, validated bool) (items []json.RawMessage, ok bool) {
	i := jsonscan.Space(data, 0)
	if i >= len(data) || data[i] != '[' || !validated && !json.Valid(data) {
		return nil, false
	}
	items = []json.RawMessage{}
	i = jsonscan.Space(data, i+1)
	if data[i] == ']' {
		return items, true
	}
	for {
		end := jsonscan.Value(data, i)
		if end < 0 {
			return nil, false
		}
		items = append(items, json.RawMessage(data[i:end:end]))
		i = jsonscan.Space(data, end)
		if data[i] == ']' {
			return items, true
		}
		i = jsonscan.Space(data, i+1) // past ','
	}
}
