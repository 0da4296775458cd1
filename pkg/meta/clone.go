package meta

import (
	"maps"
	"slices"
	"time"
)

// CloneQueue returns a copy of q that shares no memory with it, its times in UTC.
func CloneQueue(q Queue) Queue {
	q.CreatedAt, q.UpdatedAt = q.CreatedAt.UTC(), q.UpdatedAt.UTC()
	if q.Redrive != nil {
		r := *q.Redrive
		q.Redrive = &r
	}
	q.Tags, q.SQSAttributes = cloneMap(q.Tags), cloneMap(q.SQSAttributes)
	q.MaxCancels = cloneInt(q.MaxCancels)
	return q
}

func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// CloneToken returns a copy of t that shares no memory with it, its times in UTC and no
// scopes as nil.
func CloneToken(t Token) Token {
	t.CreatedAt = t.CreatedAt.UTC()
	t.ExpiresAt, t.RevokedAt = utcPtr(t.ExpiresAt), utcPtr(t.RevokedAt)
	if len(t.Scopes) == 0 {
		t.Scopes = nil
	} else {
		t.Scopes = slices.Clone(t.Scopes)
	}
	return t
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ApplyUpdate returns cur with the settings UpdateQueue may change taken from q (UpdatedAt
// in UTC, Redrive copied) and Version one higher.
func ApplyUpdate(cur, q Queue) Queue {
	cur.UpdatedAt = q.UpdatedAt.UTC()
	cur.VisibilityTimeoutSeconds = q.VisibilityTimeoutSeconds
	cur.RetentionSeconds = q.RetentionSeconds
	cur.DelaySeconds = q.DelaySeconds
	cur.ReceiveWaitSeconds = q.ReceiveWaitSeconds
	cur.ContentBasedDedup = q.ContentBasedDedup
	cur.Fairness = q.Fairness
	cur.MaxCancels = cloneInt(q.MaxCancels)
	cur.MaxMessageBytes = q.MaxMessageBytes
	cur.GroupPolicy, cur.GroupAffinitySeconds, cur.MaxGroupsPerConsumer = q.GroupPolicy, q.GroupAffinitySeconds, q.MaxGroupsPerConsumer
	cur.OnDeadLetter = q.OnDeadLetter
	cur.Tags, cur.SQSAttributes = cloneMap(q.Tags), cloneMap(q.SQSAttributes)
	cur.Redrive = nil
	if q.Redrive != nil {
		rd := *q.Redrive
		cur.Redrive = &rd
	}
	cur.Version++
	return cur
}
