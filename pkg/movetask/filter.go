// Package movetask runs move tasks (docs/redrive.md, redrive and replay): it parses a task's
// filter, decides which messages a task moves and where (Chooser), and runs tasks on the engine's
// move primitive with their progress and lease in the metadata store (Runner), so a task
// outlives the replica running it.
package movetask

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
)

// Filter selects the messages a task moves. Every field given must match.
type Filter struct {
	// Reason matches a dead-lettered message's deadLetter.reason.
	Reason string `json:"reason,omitempty"`
	// SentAfter and SentBefore bound the message's send time (exclusive).
	SentAfter  *time.Time `json:"sentAfter,omitempty"`
	SentBefore *time.Time `json:"sentBefore,omitempty"`
	GroupID    string     `json:"groupId,omitempty"`
	// Attributes is the attribute filter of a filtered receive (pkg/filter).
	Attributes map[string][]string `json:"attributes,omitempty"`
}

// Match reports whether m is selected.
func (f *Filter) Match(m engine.BrowsedMessage) bool {
	if f == nil {
		return true
	}
	if f.Reason != "" && (m.DeadLetter == nil || m.DeadLetter.Reason != f.Reason) {
		return false
	}
	if f.SentAfter != nil && !m.SentAt.After(*f.SentAfter) {
		return false
	}
	if f.SentBefore != nil && !m.SentAt.Before(*f.SentBefore) {
		return false
	}
	if f.GroupID != "" && m.GroupID != f.GroupID {
		return false
	}
	return (&filter.Filter{Attributes: f.Attributes}).Match(m.Attributes)
}

// ParseFilter reads a task's filter object; errors name the field under "filter".
func ParseFilter(data []byte) (*Filter, *apierr.Error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return nil, apierr.Invalid("filter", "must be an object with reason, sentAfter, sentBefore, groupId or attributes")
	}
	f := &Filter{}
	for name, v := range raw {
		v = bytes.TrimSpace(v)
		field := "filter." + name
		switch name {
		case "reason", "groupId":
			var s string
			if json.Unmarshal(v, &s) != nil || s == "" || len(s) > 256 {
				return nil, apierr.Invalid(field, "must be a string of 1 to 256 characters")
			}
			if name == "reason" {
				f.Reason = s
			} else {
				f.GroupID = s
			}
		case "sentAfter", "sentBefore":
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, apierr.Invalid(field, "must be an RFC 3339 time")
			}
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, apierr.Invalid(field, "must be an RFC 3339 time")
			}
			if name == "sentAfter" {
				f.SentAfter = &t
			} else {
				f.SentBefore = &t
			}
		case "attributes":
			attrs, err := filter.ParseAttributes(v)
			if err != nil {
				return nil, err.WithPrefix(field)
			}
			f.Attributes = attrs
		default:
			return nil, apierr.Invalid(field, "is not a filter field (reason, sentAfter, sentBefore, groupId, attributes)")
		}
	}
	if f.SentAfter != nil && f.SentBefore != nil && !f.SentAfter.Before(*f.SentBefore) {
		return nil, apierr.Invalid("filter.sentBefore", "must be after sentAfter")
	}
	return f, nil
}

// Encode is the filter as stored with its task ("" for none).
func (f *Filter) Encode() string {
	if f == nil {
		return ""
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// DecodeFilter reads a stored filter.
func DecodeFilter(s string) (*Filter, error) {
	if s == "" {
		return nil, nil
	}
	var f Filter
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return nil, err
	}
	return &f, nil
}
