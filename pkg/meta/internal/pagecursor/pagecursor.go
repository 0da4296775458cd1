// Package pagecursor is the opaque NextCursor of the in-memory and embedded metadata
// stores' listings.
package pagecursor

import (
	"bytes"
	"encoding/base64"
	"encoding/json"

	"github.com/queueshq/queues/pkg/meta"
)

// Cursor is what a page's NextCursor encodes: which listing, and the key it ends at.
type Cursor struct {
	List    string `json:"l"`
	Project string `json:"p,omitempty"`
	After   string `json:"a"`
}

// Encode returns c as a cursor string.
func Encode(c Cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode returns the key a cursor of listing list (in project) ends at, or meta.ErrBadCursor
// if s is not such a cursor or valid rejects its key.
func Decode(s string, list, project string, valid func(after string) bool) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", meta.ErrBadCursor
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var c Cursor
	if err := d.Decode(&c); err != nil || d.More() || c.List != list || c.Project != project || !valid(c.After) {
		return "", meta.ErrBadCursor
	}
	return c.After, nil
}
