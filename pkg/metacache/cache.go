// Package metacache keeps the API tier's copy of metadata so that a send or receive never reads
// the metadata store. Entries live for at most TTL (the staleness bound written in docs/architecture.md);
// writes made through any replica are announced on a Bus and drop the entry everywhere at once,
// so the TTL only matters when an announcement is lost.
package metacache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// DefaultTTL bounds staleness. It is below the 5 s within which a token revocation must take
// effect on every replica, leaving room for the reload itself.
const DefaultTTL = 4 * time.Second

// goneFor is how long a deleted queue's id is remembered, for long polls to notice.
const goneFor = time.Minute

// Bus carries invalidations between replicas.
type Bus interface {
	Publish(ctx context.Context, msg string) error
	// Subscribe calls fn for every message published by any replica (this one included)
	// until the returned function is called.
	Subscribe(fn func(msg string)) (stop func())
}

type entry[T any] struct {
	v       T
	expires time.Time
	// refreshing is set while a background reload of this entry runs.
	refreshing bool
}

// invalidation is what one invalidation message named.
type invalidation struct {
	queue ids.ID
	token tokenKey
	topic ids.ID
}

// invalidationLog is how many invalidations a load can look back over; a load overtaken by
// more is not cached.
const invalidationLog = 256

// refreshShare is the last part of an entry's TTL in which a hit starts a background reload:
// a key read steadily is reloaded before it expires, so none of its reads waits for the
// store, and none is served a value older than the TTL.
const refreshShare = 4

type nameKey struct {
	project ids.ID
	name    string
}

type tokenKey struct{ project, token ids.ID }

// Cache wraps a meta.Store. Reads of tokens and queues are cached; every other call and every
// write passes through, and writes invalidate.
type Cache struct {
	meta.Store
	ttl  time.Duration
	clk  clock.Clock
	bus  Bus
	stop func()

	mu     sync.Mutex
	tokens map[tokenKey]entry[meta.Token]
	// tokenProjects is never invalidated: a token's project never changes.
	tokenProjects map[ids.ID]entry[ids.ID]
	byID          map[ids.ID]entry[meta.Queue]
	byName        map[nameKey]entry[meta.Queue]
	gone          map[ids.ID]time.Time
	// topicsByID and topicsByName cache topics (topics.go) as byID and byName do queues.
	topicsByID   map[ids.ID]entry[meta.Topic]
	topicsByName map[nameKey]entry[meta.Topic]
	// goneSwept is len(gone) after its last sweep: the next sweep waits until it doubles.
	goneSwept int
	// gen counts invalidations, and log holds the latest of them: a load that started
	// before an invalidation of what it read does not cache its result, which may be from
	// before the change announced. Others' invalidations do not stop it caching.
	gen uint64
	log [invalidationLog]invalidation
	// refreshes are the background reloads running (Close waits for them).
	refreshes sync.WaitGroup
}

// New wraps store. ttl <= 0 means DefaultTTL.
func New(store meta.Store, bus Bus, clk clock.Clock, ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	c := &Cache{
		Store: store, ttl: ttl, clk: clk, bus: bus,
		tokens:        map[tokenKey]entry[meta.Token]{},
		tokenProjects: map[ids.ID]entry[ids.ID]{},
		byID:          map[ids.ID]entry[meta.Queue]{},
		byName:        map[nameKey]entry[meta.Queue]{},
		gone:          map[ids.ID]time.Time{},
		topicsByID:    map[ids.ID]entry[meta.Topic]{},
		topicsByName:  map[nameKey]entry[meta.Topic]{},
	}
	c.stop = bus.Subscribe(c.apply)
	return c
}

// Close stops listening for invalidations and waits for background reloads.
func (c *Cache) Close() {
	c.stop()
	c.refreshes.Wait()
}

// Invalidation messages: "q <queue id>" (settings changed), "d <queue id>" (deleted),
// "t <project id> <token id>" (revoked), "tp <topic id>" (a topic changed or was deleted).
func (c *Cache) apply(msg string) {
	f := strings.Fields(msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(f) == 2 && (f[0] == "q" || f[0] == "d"):
		id, err := ids.ParseUUID(f[1])
		if err != nil {
			return
		}
		c.logLocked(invalidation{queue: id})
		c.dropQueueLocked(id)
		if f[0] == "d" {
			c.goneLocked(id)
		}
	case len(f) == 2 && f[0] == topicChanged:
		if id, err := ids.ParseUUID(f[1]); err == nil {
			c.logLocked(invalidation{topic: id})
			c.dropTopicLocked(id)
		}
	case len(f) == 3 && f[0] == "t":
		p, err1 := ids.ParseUUID(f[1])
		t, err2 := ids.ParseUUID(f[2])
		if err1 == nil && err2 == nil {
			c.logLocked(invalidation{token: tokenKey{p, t}})
			delete(c.tokens, tokenKey{p, t})
		}
	}
}

func (c *Cache) dropQueueLocked(id ids.ID) {
	delete(c.byID, id)
	for k, e := range c.byName {
		if e.v.ID == id {
			delete(c.byName, k)
		}
	}
}

func (c *Cache) logLocked(inv invalidation) {
	c.log[c.gen%invalidationLog] = inv
	c.gen++
}

// overtakenLocked reports whether an invalidation since gen named what hit matches.
func (c *Cache) overtakenLocked(gen uint64, hit func(invalidation) bool) bool {
	if c.gen-gen > invalidationLog {
		return true
	}
	for g := gen; g < c.gen; g++ {
		if hit(c.log[g%invalidationLog]) {
			return true
		}
	}
	return false
}

// goneLocked remembers a deleted queue. Expired ids are swept only when the map has doubled
// since the last sweep, so a project deleting queues in a loop costs O(1) per deletion.
func (c *Cache) goneLocked(id ids.ID) {
	now := c.clk.Now()
	c.gone[id] = now.Add(goneFor)
	if len(c.gone) < 2*max(c.goneSwept, 32) {
		return
	}
	for k, until := range c.gone {
		if now.After(until) {
			delete(c.gone, k)
		}
	}
	c.goneSwept = len(c.gone)
}

// Gone reports whether queue id was deleted recently (seen through this cache or announced).
// It looks at id alone: every parked long poll asks several times a second.
func (c *Cache) Gone(id ids.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.gone[id]
	return ok && !c.clk.Now().After(until)
}

func (c *Cache) announce(ctx context.Context, msg string) {
	// A lost announcement is bounded by the TTL; the write itself already succeeded.
	_ = c.bus.Publish(ctx, msg)
	c.apply(msg)
}

// cached returns m[k] while it is fresh and loads it with ctx otherwise. hit says whether an
// invalidation concerns a loaded value; stored, when not nil, is called (under c.mu) with
// every loaded value that was cached and its expiry. In the last refreshShare-th of its
// TTL a hit also starts one background reload, so a key in steady use never waits for the
// store, and is never served older than the TTL.
func cached[K comparable, T any](ctx context.Context, c *Cache, m map[K]entry[T], k K, load func(context.Context) (T, error), hit func(invalidation, T) bool, stored func(T, time.Time)) (T, error) {
	now := c.clk.Now()
	c.mu.Lock()
	e, ok := m[k]
	if ok && now.Before(e.expires) {
		if !e.refreshing && !now.Before(e.expires.Add(-c.ttl/refreshShare)) {
			e.refreshing = true
			m[k] = e
			c.refreshes.Add(1)
			go func() {
				defer c.refreshes.Done()
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ttl)
				defer cancel()
				if _, err := reload(rctx, c, m, k, load, hit, stored); err != nil {
					// The entry expires as it would have; a later hit may try again.
					c.mu.Lock()
					if e, ok := m[k]; ok {
						e.refreshing = false
						m[k] = e
					}
					c.mu.Unlock()
				}
			}()
		}
		c.mu.Unlock()
		return e.v, nil
	}
	c.mu.Unlock()
	return reload(ctx, c, m, k, load, hit, stored)
}

// reload loads m[k] and caches it, unless an invalidation came while it loaded (the value
// may be from before the change it announced).
func reload[K comparable, T any](ctx context.Context, c *Cache, m map[K]entry[T], k K, load func(context.Context) (T, error), hit func(invalidation, T) bool, stored func(T, time.Time)) (T, error) {
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	start := c.clk.Now()
	v, err := load(ctx)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if hit == nil || !c.overtakenLocked(gen, func(inv invalidation) bool { return hit(inv, v) }) {
		// The TTL runs from before the read: the value is at least that old.
		m[k] = entry[T]{v: v, expires: start.Add(c.ttl)}
		if stored != nil {
			stored(v, start.Add(c.ttl))
		}
	}
	c.mu.Unlock()
	return v, nil
}

// GetToken returns the token record, cached.
func (c *Cache) GetToken(ctx context.Context, projectID, tokenID ids.ID) (meta.Token, error) {
	k := tokenKey{projectID, tokenID}
	return cached(ctx, c, c.tokens, k, func(ctx context.Context) (meta.Token, error) {
		return c.Store.GetToken(ctx, projectID, tokenID)
	}, func(inv invalidation, _ meta.Token) bool { return inv.token == k }, nil)
}

// TokenProject returns a token's project, cached (it never changes).
func (c *Cache) TokenProject(ctx context.Context, tokenID ids.ID) (ids.ID, error) {
	return cached(ctx, c, c.tokenProjects, tokenID, func(ctx context.Context) (ids.ID, error) {
		return c.Store.TokenProject(ctx, tokenID)
	}, nil, nil)
}

// RevokeToken revokes and announces it.
func (c *Cache) RevokeToken(ctx context.Context, projectID, tokenID ids.ID, at time.Time) error {
	if err := c.Store.RevokeToken(ctx, projectID, tokenID, at); err != nil {
		return err
	}
	c.announce(ctx, fmt.Sprintf("t %s %s", projectID, tokenID))
	return nil
}

// queueHit: an invalidation of q's id concerns a loaded q.
func queueHit(inv invalidation, q meta.Queue) bool { return inv.queue == q.ID }

// rememberLocked caches q under its id and its name.
func (c *Cache) rememberLocked(q meta.Queue, expires time.Time) {
	e := entry[meta.Queue]{v: q, expires: expires}
	c.byID[q.ID] = e
	c.byName[nameKey{q.ProjectID, q.Name}] = e
}

// GetQueueByID finds a queue by id alone, cached.
func (c *Cache) GetQueueByID(ctx context.Context, queueID ids.ID) (meta.Queue, error) {
	return cached(ctx, c, c.byID, queueID, func(ctx context.Context) (meta.Queue, error) {
		return c.Store.GetQueueByID(ctx, queueID)
	}, queueHit, c.rememberLocked)
}

// GetQueue finds a queue of a project by id, cached. A queue of another project is NotFound,
// exactly like a missing one.
func (c *Cache) GetQueue(ctx context.Context, projectID, queueID ids.ID) (meta.Queue, error) {
	q, err := c.GetQueueByID(ctx, queueID)
	if err != nil {
		return q, err
	}
	if q.ProjectID != projectID {
		return meta.Queue{}, meta.ErrNotFound
	}
	return q, nil
}

// GetQueueByName finds a queue of a project by name, cached.
func (c *Cache) GetQueueByName(ctx context.Context, projectID ids.ID, name string) (meta.Queue, error) {
	return cached(ctx, c, c.byName, nameKey{projectID, name}, func(ctx context.Context) (meta.Queue, error) {
		return c.Store.GetQueueByName(ctx, projectID, name)
	}, queueHit, c.rememberLocked)
}

// CreateQueue creates a queue. The stored copy (with the version the store gave it) is read on
// first use, not taken from the argument.
func (c *Cache) CreateQueue(ctx context.Context, q meta.Queue) error {
	return c.Store.CreateQueue(ctx, q)
}

// UpdateQueue updates and announces a queue.
func (c *Cache) UpdateQueue(ctx context.Context, q meta.Queue) (meta.Queue, error) {
	out, err := c.Store.UpdateQueue(ctx, q)
	if err != nil {
		if errors.Is(err, meta.ErrVersionConflict) {
			// Our copy is stale: the caller re-reads, and must get the stored version.
			c.mu.Lock()
			c.dropQueueLocked(q.ID)
			c.mu.Unlock()
		}
		return out, err
	}
	c.announce(ctx, "q "+q.ID.String())
	c.mu.Lock()
	c.rememberLocked(out, c.clk.Now().Add(c.ttl))
	c.mu.Unlock()
	return out, nil
}

// DeleteQueue deletes and announces a queue.
func (c *Cache) DeleteQueue(ctx context.Context, projectID, queueID ids.ID) (meta.Queue, error) {
	q, err := c.Store.DeleteQueue(ctx, projectID, queueID)
	if err != nil {
		return q, err
	}
	c.announce(ctx, "d "+queueID.String())
	return q, nil
}
