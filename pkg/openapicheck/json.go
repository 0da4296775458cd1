package openapicheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// decodeJSON decodes one JSON value the way the spec validators expect (numbers as float64).
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// errorCode returns error.code of a decoded Error body, or "".
func errorCode(v any) string {
	m, _ := v.(map[string]any)
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}
