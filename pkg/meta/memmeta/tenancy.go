package memmeta

import (
	"context"
	"slices"
	"time"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

var _ meta.TenancyStore = (*Store)(nil)

type hourKey struct {
	project ids.ID
	hour    int64 // unix seconds of the hour's start
}

type hourRec struct {
	c    meta.Counters
	slot int // last storedByteHours sample slot added, -1: none
}

// tenancy is the store's limits and meters (guarded by Store.mu).
type tenancy struct {
	limits  map[ids.ID]meta.Limits
	hours   map[hourKey]*hourRec
	flushes map[string]uint64 // replica -> last applied flush
}

func newTenancy() tenancy {
	return tenancy{limits: map[ids.ID]meta.Limits{}, hours: map[hourKey]*hourRec{}, flushes: map[string]uint64{}}
}

func projectNotFound(id ids.ID) error { return meta.NotFound(meta.KindProject, id) }

// GetLimits reads a project's own limits.
func (s *Store) GetLimits(_ context.Context, project ids.ID) (meta.Limits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.projects[project]; !ok {
		return nil, projectNotFound(project)
	}
	return s.tenancy.limits[project].Apply(nil), nil
}

// UpdateLimits applies patch to a project's own limits.
func (s *Store) UpdateLimits(_ context.Context, project ids.ID, patch meta.LimitsPatch) (meta.Limits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.projects[project]; !ok {
		return nil, projectNotFound(project)
	}
	next := s.tenancy.limits[project].Apply(patch)
	s.tenancy.limits[project] = next
	return next.Apply(nil), nil
}

func (s *Store) countsLocked(project ids.ID) meta.ProjectCounts {
	var c meta.ProjectCounts
	for _, r := range s.queues {
		if r.q.ProjectID == project {
			c.Queues++
		}
	}
	for _, sub := range s.subs {
		if sub.ProjectID == project {
			c.Subscriptions++
		}
	}
	c.Topics = s.topicsOf(project)
	return c
}

// Counts counts a project's queues, subscriptions and topics.
func (s *Store) Counts(_ context.Context, project ids.ID) (meta.ProjectCounts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.projects[project]; !ok {
		return meta.ProjectCounts{}, projectNotFound(project)
	}
	return s.countsLocked(project), nil
}

func (s *Store) hourLocked(project ids.ID, hour time.Time) *hourRec {
	k := hourKey{project, meta.HourOf(hour).Unix()}
	r := s.tenancy.hours[k]
	if r == nil {
		r = &hourRec{slot: -1}
		s.tenancy.hours[k] = r
	}
	return r
}

// AddUsage adds a flush's counters unless this replica's flush Seq was applied already.
func (s *Store) AddUsage(_ context.Context, f meta.UsageFlush) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Seq <= s.tenancy.flushes[f.Replica] {
		return nil
	}
	for _, h := range f.Hours {
		s.hourLocked(h.Project, h.Hour).c.Add(h.Counters)
	}
	s.tenancy.flushes[f.Replica] = f.Seq
	return nil
}

// AddStoredSample adds one slot's storedByteHours once.
func (s *Store) AddStoredSample(_ context.Context, project ids.ID, hour time.Time, slot int, byteHours int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.hourLocked(project, hour)
	if slot <= r.slot {
		return nil
	}
	r.slot = slot
	r.c.StoredByteHours += byteHours
	return nil
}

// Usage reads a project's hours in [from, to).
func (s *Store) Usage(_ context.Context, project ids.ID, from, to time.Time) ([]meta.UsageHour, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []meta.UsageHour{}
	for k, r := range s.tenancy.hours {
		h := time.Unix(k.hour, 0).UTC()
		if k.project == project && !h.Before(meta.HourOf(from)) && h.Before(to) && !r.c.IsZero() {
			out = append(out, meta.UsageHour{Project: project, Hour: h, Counters: r.c})
		}
	}
	slices.SortFunc(out, func(a, b meta.UsageHour) int { return a.Hour.Compare(b.Hour) })
	return out, nil
}
