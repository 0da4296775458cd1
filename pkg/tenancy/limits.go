// Package tenancy is the control plane of multi-tenancy: the operator's default project
// limits and their effective values, the per-project count of long polls parked at once
// (shared by every replica through Redis, or in-process), and the usage meter that counts each
// project's use per UTC hour in memory and flushes it to the metadata store.
package tenancy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/queueshq/queues/pkg/meta"
)

// Limits are the effective limits of a project.
type Limits struct {
	MaxQueues          int64 `json:"maxQueues"`
	MaxSubscriptions   int64 `json:"maxSubscriptions"`
	MaxTopics          int64 `json:"maxTopics"`
	MaxStoredBytes     int64 `json:"maxStoredBytes"`
	RequestsPerSecond  int64 `json:"requestsPerSecond"`
	MaxWaitingReceives int64 `json:"maxWaitingReceives"`
	// SendBytesPerSecond bounds the request bytes of the project's sends a second, counted
	// from Content-Length before the body is read (docs/tenancy.md).
	SendBytesPerSecond int64 `json:"sendBytesPerSecond"`
}

// Defaults are the limits of a project that has none of its own, unless the operator
// configures others.
var Defaults = Limits{
	MaxQueues: 1000, MaxSubscriptions: 100, MaxTopics: 100, MaxStoredBytes: 1 << 30,
	RequestsPerSecond: 10_000, MaxWaitingReceives: 1000, SendBytesPerSecond: 64 << 20,
}

// Range is the values a limit may take.
type Range struct{ Min, Max int64 }

// Ranges bound each limit. Zero queues, subscriptions, topics or waiting receives is a valid freeze;
// a stored-bytes or request-rate limit of zero would be the engine's and limiter's "none",
// so those start at 1.
var Ranges = map[string]Range{
	meta.LimitMaxQueues:          {0, 1_000_000},
	meta.LimitMaxSubscriptions:   {0, 1_000_000},
	meta.LimitMaxTopics:          {0, 1_000_000},
	meta.LimitMaxStoredBytes:     {1, 1 << 50},
	meta.LimitRequestsPerSecond:  {1, 10_000_000},
	meta.LimitMaxWaitingReceives: {0, 1_000_000},
	meta.LimitSendBytesPerSecond: {1 << 10, 1 << 40},
}

func (l *Limits) field(name string) *int64 {
	switch name {
	case meta.LimitMaxQueues:
		return &l.MaxQueues
	case meta.LimitMaxSubscriptions:
		return &l.MaxSubscriptions
	case meta.LimitMaxTopics:
		return &l.MaxTopics
	case meta.LimitMaxStoredBytes:
		return &l.MaxStoredBytes
	case meta.LimitRequestsPerSecond:
		return &l.RequestsPerSecond
	case meta.LimitMaxWaitingReceives:
		return &l.MaxWaitingReceives
	case meta.LimitSendBytesPerSecond:
		return &l.SendBytesPerSecond
	}
	return nil
}

// Get returns the limit named name (0 for an unknown name).
func (l Limits) Get(name string) int64 {
	if f := l.field(name); f != nil {
		return *f
	}
	return 0
}

// With returns l with a project's own values in place of the defaults. Unknown names (a
// limit a newer version stored) are ignored.
func (l Limits) With(own meta.Limits) Limits {
	for name, v := range own {
		if f := l.field(name); f != nil {
			*f = v
		}
	}
	return l
}

// CheckValue reports why v is no valid value of the limit named name ("" when it is).
func CheckValue(name string, v int64) string {
	r, ok := Ranges[name]
	switch {
	case !ok:
		return fmt.Sprintf("unknown limit; limits are %v", meta.LimitNames)
	case v < r.Min || v > r.Max:
		return fmt.Sprintf("must be an integer from %d to %d", r.Min, r.Max)
	}
	return ""
}

// ParseDefaults reads the operator's defaults: a JSON object with any subset of the limits
// (e.g. {"maxQueues": 50, "requestsPerSecond": 500}); absent ones keep Defaults. An empty
// string is Defaults. Errors name the offending limit.
func ParseDefaults(s string) (Limits, error) {
	out := Defaults
	if len(bytes.TrimSpace([]byte(s))) == 0 {
		return out, nil
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	var m map[string]json.RawMessage
	if err := d.Decode(&m); err != nil || d.More() || m == nil {
		return out, fmt.Errorf("must be a JSON object of limits (%v) to integers", meta.LimitNames)
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v, err := strconv.ParseInt(string(bytes.TrimSpace(m[name])), 10, 64)
		if err != nil {
			return Defaults, fmt.Errorf("%s: must be an integer", name)
		}
		if why := CheckValue(name, v); why != "" {
			return Defaults, fmt.Errorf("%s: %s", name, why)
		}
		*out.field(name) = v
	}
	return out, nil
}
