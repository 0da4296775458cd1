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

	"github.com/queueshq/queues/pkg/apierr"
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
}

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
	}
	c.stop = bus.Subscribe(c.apply)
	return c
}

// Close stops listening for invalidations.
func (c *Cache) Close() { c.stop() }

// Invalidation messages: "q <queue id>" (settings changed), "d <queue id>" (deleted),
// "t <project id> <token id>" (revoked).
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
		c.dropQueueLocked(id)
		if f[0] == "d" {
			c.gone[id] = c.clk.Now().Add(goneFor)
		}
	case len(f) == 3 && f[0] == "t":
		p, err1 := ids.ParseUUID(f[1])
		t, err2 := ids.ParseUUID(f[2])
		if err1 == nil && err2 == nil {
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

// Gone reports whether queue id was deleted recently (seen through this cache or announced).
func (c *Cache) Gone(id ids.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	for k, until := range c.gone {
		if now.After(until) {
			delete(c.gone, k)
		}
	}
	_, ok := c.gone[id]
	return ok
}

func (c *Cache) announce(ctx context.Context, msg string) {
	// A lost announcement is bounded by the TTL; the write itself already succeeded.
	_ = c.bus.Publish(ctx, msg)
	c.apply(msg)
}

func cached[K comparable, T any](c *Cache, m map[K]entry[T], k K, load func() (T, error)) (T, error) {
	now := c.clk.Now()
	c.mu.Lock()
	e, ok := m[k]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	m[k] = entry[T]{v: v, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return v, nil
}

// GetToken returns the token record, cached.
func (c *Cache) GetToken(ctx context.Context, projectID, tokenID ids.ID) (meta.Token, error) {
	return cached(c, c.tokens, tokenKey{projectID, tokenID}, func() (meta.Token, error) {
		return c.Store.GetToken(ctx, projectID, tokenID)
	})
}

// TokenProject returns a token's project, cached (it never changes).
func (c *Cache) TokenProject(ctx context.Context, tokenID ids.ID) (ids.ID, error) {
	return cached(c, c.tokenProjects, tokenID, func() (ids.ID, error) {
		return c.Store.TokenProject(ctx, tokenID)
	})
}

// RevokeToken revokes and announces it.
func (c *Cache) RevokeToken(ctx context.Context, projectID, tokenID ids.ID, at time.Time) error {
	if err := c.Store.RevokeToken(ctx, projectID, tokenID, at); err != nil {
		return err
	}
	c.announce(ctx, fmt.Sprintf("t %s %s", projectID, tokenID))
	return nil
}

func (c *Cache) remember(q meta.Queue) {
	e := entry[meta.Queue]{v: q, expires: c.clk.Now().Add(c.ttl)}
	c.mu.Lock()
	c.byID[q.ID] = e
	c.byName[nameKey{q.ProjectID, q.Name}] = e
	c.mu.Unlock()
}

// GetQueueByID finds a queue by id alone, cached.
func (c *Cache) GetQueueByID(ctx context.Context, queueID ids.ID) (meta.Queue, error) {
	q, err := cached(c, c.byID, queueID, func() (meta.Queue, error) { return c.Store.GetQueueByID(ctx, queueID) })
	if err == nil {
		c.remember(q)
	}
	return q, err
}

// GetQueue finds a queue of a project by id, cached. A queue of another project is NotFound,
// exactly like a missing one.
func (c *Cache) GetQueue(ctx context.Context, projectID, queueID ids.ID) (meta.Queue, error) {
	q, err := c.GetQueueByID(ctx, queueID)
	if err != nil {
		return q, err
	}
	if q.ProjectID != projectID {
		return meta.Queue{}, apierr.ErrNotFound
	}
	return q, nil
}

// GetQueueByName finds a queue of a project by name, cached.
func (c *Cache) GetQueueByName(ctx context.Context, projectID ids.ID, name string) (meta.Queue, error) {
	q, err := cached(c, c.byName, nameKey{projectID, name}, func() (meta.Queue, error) {
		return c.Store.GetQueueByName(ctx, projectID, name)
	})
	if err == nil {
		c.remember(q)
	}
	return q, err
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
	c.remember(out)
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
