package metacache

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// LocalBus is a Bus within one process (embedded mode, tests).
type LocalBus struct {
	mu   sync.Mutex
	subs map[int]func(string)
	next int
}

// Publish calls every subscriber.
func (b *LocalBus) Publish(_ context.Context, msg string) error {
	b.mu.Lock()
	fns := make([]func(string), 0, len(b.subs))
	for _, fn := range b.subs {
		fns = append(fns, fn)
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(msg)
	}
	return nil
}

// Subscribe registers fn.
func (b *LocalBus) Subscribe(fn func(string)) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[int]func(string){}
	}
	id := b.next
	b.next++
	b.subs[id] = fn
	return func() {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
	}
}

// RedisBus is a Bus over one Redis pub/sub channel: one subscription per replica.
type RedisBus struct {
	rdb     redis.UniversalClient
	channel string
}

// NewRedisBus returns a bus on channel.
func NewRedisBus(rdb redis.UniversalClient, channel string) *RedisBus {
	return &RedisBus{rdb: rdb, channel: channel}
}

// Publish sends msg to every replica.
func (b *RedisBus) Publish(ctx context.Context, msg string) error {
	return b.rdb.Publish(ctx, b.channel, msg).Err()
}

// Subscribe listens until stop is called; go-redis reconnects and resubscribes on its own.
func (b *RedisBus) Subscribe(fn func(string)) func() {
	ps := b.rdb.Subscribe(context.Background(), b.channel)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range ps.Channel() {
			fn(m.Payload)
		}
	}()
	return func() {
		_ = ps.Close()
		<-done
	}
}
