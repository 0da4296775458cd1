package metacache

import (
	"context"
	"errors"
	"time"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// topicChanged begins the invalidation of a topic (changed or deleted): a publish resolves
// its topic through this cache, so every replica must drop a changed topic at once.
const topicChanged = "tp"

// Topics wraps a meta.TopicStore so that a publish does not read the metadata store: topic
// reads are cached in the Cache's maps (same TTL, same bus), writes pass through and
// announce. Bindings are not cached: only management routes and the fan-out read them.
type Topics struct {
	meta.TopicStore
	c *Cache
}

// Topics wraps store with this cache's topic entries.
func (c *Cache) Topics(store meta.TopicStore) *Topics { return &Topics{TopicStore: store, c: c} }

func (c *Cache) dropTopicLocked(id ids.ID) {
	delete(c.topicsByID, id)
	for k, e := range c.topicsByName {
		if e.v.ID == id {
			delete(c.topicsByName, k)
		}
	}
}

func topicHit(inv invalidation, t meta.Topic) bool { return inv.topic == t.ID }

// rememberTopicLocked caches t under its id and its name.
func (c *Cache) rememberTopicLocked(t meta.Topic, expires time.Time) {
	e := entry[meta.Topic]{v: t, expires: expires}
	c.topicsByID[t.ID] = e
	c.topicsByName[nameKey{t.ProjectID, t.Name}] = e
}

// GetTopicByID finds a topic by id alone, cached.
func (t *Topics) GetTopicByID(ctx context.Context, topicID ids.ID) (meta.Topic, error) {
	c := t.c
	return cached(ctx, c, c.topicsByID, topicID, func(ctx context.Context) (meta.Topic, error) {
		return t.TopicStore.GetTopicByID(ctx, topicID)
	}, topicHit, c.rememberTopicLocked)
}

// GetTopic finds a topic of a project by id, cached; another project's is NotFound.
func (t *Topics) GetTopic(ctx context.Context, projectID, topicID ids.ID) (meta.Topic, error) {
	tp, err := t.GetTopicByID(ctx, topicID)
	if err != nil {
		return tp, err
	}
	if tp.ProjectID != projectID {
		return meta.Topic{}, meta.ErrNotFound
	}
	return tp, nil
}

// GetTopicByName finds a topic of a project by name, cached.
func (t *Topics) GetTopicByName(ctx context.Context, projectID ids.ID, name string) (meta.Topic, error) {
	c := t.c
	return cached(ctx, c, c.topicsByName, nameKey{projectID, name}, func(ctx context.Context) (meta.Topic, error) {
		return t.TopicStore.GetTopicByName(ctx, projectID, name)
	}, topicHit, c.rememberTopicLocked)
}

// UpdateTopic updates and announces a topic.
func (t *Topics) UpdateTopic(ctx context.Context, tp meta.Topic) (meta.Topic, error) {
	c := t.c
	out, err := t.TopicStore.UpdateTopic(ctx, tp)
	if err != nil {
		if errors.Is(err, meta.ErrTopicConflict) {
			// Our copy is stale: the caller re-reads, and must get the stored version.
			c.mu.Lock()
			c.dropTopicLocked(tp.ID)
			c.mu.Unlock()
		}
		return out, err
	}
	c.announce(ctx, topicChanged+" "+tp.ID.String())
	c.mu.Lock()
	c.rememberTopicLocked(out, c.clk.Now().Add(c.ttl))
	c.mu.Unlock()
	return out, nil
}

// DeleteTopic deletes and announces a topic.
func (t *Topics) DeleteTopic(ctx context.Context, projectID, topicID ids.ID) (meta.Topic, []meta.Binding, error) {
	tp, bs, err := t.TopicStore.DeleteTopic(ctx, projectID, topicID)
	if err != nil {
		return tp, bs, err
	}
	t.c.announce(ctx, topicChanged+" "+topicID.String())
	return tp, bs, nil
}
