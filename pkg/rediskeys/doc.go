// Package rediskeys is the registry of every Redis name the service uses: the keys of each
// package that stores in Redis, their hash tags (Redis Cluster slots), and the pub/sub
// channels. Nothing else builds a Redis name (tests/repo TestRedisNamesInRegistry), so two
// packages cannot collide on a name, and an operator reading a keyspace finds every name here.
//
// It is a leaf package (it imports ids only), so the API, the pusher, the limiter and the
// engines can all use it without importing one another.
package rediskeys
