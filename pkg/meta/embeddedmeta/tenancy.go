package embeddedmeta

// Tenancy data, in the same bbolt file as the rest:
//
//	limits    project id -> JSON of the project's own limits (absent: none)
//	usage     project id ‖ hour (unix seconds, 8 bytes big-endian) -> JSON of usageRec
//	flushes   replica name -> the last usage flush applied (8 bytes big-endian)
//
// Queue and subscription counts are counted in the transaction that checks them (a prefix
// scan of names; a scan of subs), so they can never disagree with what is stored. One bbolt
// transaction is serializable, which is what makes a quota check and the create atomic.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

var (
	bLimits  = []byte("limits")
	bUsage   = []byte("usage")
	bFlushes = []byte("flushes")

	tenancyBuckets = [][]byte{bLimits, bUsage, bFlushes}
)

var _ meta.TenancyStore = (*Store)(nil)

type usageRec struct {
	C    meta.Counters `json:"c"`
	Slot int           `json:"slot"` // last storedByteHours sample slot added, -1: none
}

func projectNotFound(id ids.ID) error { return meta.NotFound(meta.KindProject, id) }

func hasProject(tx *bolt.Tx, id ids.ID) bool { return tx.Bucket(bProjects).Get(id[:]) != nil }

func countQueues(tx *bolt.Tx, project ids.ID) int64 {
	var n int64
	c := tx.Bucket(bNames).Cursor()
	for k, _ := c.Seek(project[:]); k != nil && bytes.HasPrefix(k, project[:]); k, _ = c.Next() {
		n++
	}
	return n
}

func countSubs(tx *bolt.Tx, project ids.ID) (int64, error) {
	var n int64
	err := tx.Bucket(bSubs).ForEach(func(k, v []byte) error {
		var s struct{ ProjectID ids.ID }
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("corrupt record %x: %w", k, err)
		}
		if s.ProjectID == project {
			n++
		}
		return nil
	})
	return n, err
}

func readLimits(tx *bolt.Tx, project ids.ID) (meta.Limits, error) {
	l := meta.Limits{}
	_, err := getJSON(tx.Bucket(bLimits), project[:], &l)
	return l, err
}

// GetLimits reads a project's own limits.
func (s *Store) GetLimits(_ context.Context, project ids.ID) (meta.Limits, error) {
	var l meta.Limits
	err := s.view(func(tx *bolt.Tx) error {
		if !hasProject(tx, project) {
			return projectNotFound(project)
		}
		var err error
		l, err = readLimits(tx, project)
		return err
	})
	return l, err
}

// UpdateLimits applies patch to a project's own limits.
func (s *Store) UpdateLimits(_ context.Context, project ids.ID, patch meta.LimitsPatch) (meta.Limits, error) {
	var l meta.Limits
	err := s.update(func(tx *bolt.Tx) error {
		if !hasProject(tx, project) {
			return projectNotFound(project)
		}
		cur, err := readLimits(tx, project)
		if err != nil {
			return err
		}
		l = cur.Apply(patch)
		return putJSON(tx.Bucket(bLimits), project[:], l)
	})
	return l, err
}

// Counts counts a project's queues, subscriptions and topics.
func (s *Store) Counts(_ context.Context, project ids.ID) (meta.ProjectCounts, error) {
	var c meta.ProjectCounts
	err := s.view(func(tx *bolt.Tx) error {
		if !hasProject(tx, project) {
			return projectNotFound(project)
		}
		c.Queues = countQueues(tx, project)
		var err error
		c.Topics = countPrefix(tx, bTopicNames, project[:])
		c.Subscriptions, err = countSubs(tx, project)
		return err
	})
	return c, err
}

func usageKey(project ids.ID, hour time.Time) []byte {
	return binary.BigEndian.AppendUint64(cat(project, nil), uint64(meta.HourOf(hour).Unix()))
}

func changeHour(tx *bolt.Tx, project ids.ID, hour time.Time, fn func(r *usageRec) bool) error {
	b, k := tx.Bucket(bUsage), usageKey(project, hour)
	r := usageRec{Slot: -1}
	if _, err := getJSON(b, k, &r); err != nil {
		return err
	}
	if !fn(&r) {
		return nil
	}
	return putJSON(b, k, r)
}

// AddUsage adds a flush's counters in one transaction, unless the replica's flush Seq was
// applied already.
func (s *Store) AddUsage(_ context.Context, f meta.UsageFlush) error {
	return s.update(func(tx *bolt.Tx) error {
		fb := tx.Bucket(bFlushes)
		if last := fb.Get([]byte(f.Replica)); len(last) == 8 && f.Seq <= binary.BigEndian.Uint64(last) {
			return nil
		}
		for _, h := range f.Hours {
			if err := changeHour(tx, h.Project, h.Hour, func(r *usageRec) bool { r.C.Add(h.Counters); return true }); err != nil {
				return err
			}
		}
		return fb.Put([]byte(f.Replica), binary.BigEndian.AppendUint64(nil, f.Seq))
	})
}

// AddStoredSample adds one slot's storedByteHours once.
func (s *Store) AddStoredSample(_ context.Context, project ids.ID, hour time.Time, slot int, byteHours int64) error {
	return s.update(func(tx *bolt.Tx) error {
		return changeHour(tx, project, hour, func(r *usageRec) bool {
			if slot <= r.Slot {
				return false
			}
			r.Slot, r.C.StoredByteHours = slot, r.C.StoredByteHours+byteHours
			return true
		})
	})
}

// Usage reads a project's hours in [from, to).
func (s *Store) Usage(_ context.Context, project ids.ID, from, to time.Time) ([]meta.UsageHour, error) {
	out := []meta.UsageHour{}
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bUsage).Cursor()
		for k, _ := c.Seek(usageKey(project, from)); k != nil && bytes.HasPrefix(k, project[:]); k, _ = c.Next() {
			h := time.Unix(int64(binary.BigEndian.Uint64(k[16:])), 0).UTC()
			if !h.Before(to) {
				break
			}
			var r usageRec
			if _, err := getJSON(tx.Bucket(bUsage), k, &r); err != nil {
				return err
			}
			if !r.C.IsZero() {
				out = append(out, meta.UsageHour{Project: project, Hour: h, Counters: r.C})
			}
		}
		return nil
	})
	return out, err
}
