package redisengine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Stored bytes (docs/stored-bytes.md; keys.go's b keys). Every partition script that stores
// or removes payload moves its partition's byte hash in the same step. On a single server the
// script also folds the change into the project's byte hash, so the project's total is exact
// at every moment and a send checks maxStoredBytes in the script that stores it. On Redis
// Cluster a script reaches one slot only: the engine folds each change into the project's hash
// right after the script (fold), idempotently by version, and Sweep folds every partition it
// visits, so a fold lost to a crash is made up within a sweep round. A send under a limit on
// Cluster first reserves its bytes in the project's hash (bytes_reserve.lua) and releases them in
// its fold: concurrent sends on any number of replicas never pass the limit together.

// reservationTTL is how long a Cluster send reservation holds when its sender dies before
// releasing it (engine clock).
const reservationTTL = 30 * time.Second

// errOverQuota is a partition script's refusal of a send for the project's maxStoredBytes.
var errOverQuota = errors.New("over maxStoredBytes")

// errFenced is send.lua's refusal of a partition fenced for a pending barrier (barrier.go).
var errFenced = errors.New("partition fenced for a barrier")

// byteKeys are the stored-bytes keys a partition script takes after its own: the partition's
// byte hash and, on a single server, the project's.
func (e *Engine) byteKeys(q engine.Queue, k partKeys) []string {
	if e.cluster || q.Project.IsZero() {
		return []string{k.Bytes}
	}
	return []string{k.Bytes, projectBytesKey(q.Project)}
}

// withBytes is keys followed by byteKeys.
func (e *Engine) withBytes(q engine.Queue, k partKeys, keys ...string) []string {
	return append(keys, e.byteKeys(q, k)...)
}

// inline reports whether the partition scripts fold into the project's hash themselves (the
// "1" of the scripts that take P optionally at the end of a variable key list).
func (e *Engine) inline(q engine.Queue) string {
	if e.cluster || q.Project.IsZero() {
		return "0"
	}
	return "1"
}

// fold applies the partitions' current byte counts to the project's total and releases the
// given reservations (Cluster only; on a single server the scripts did it). A failure is
// logged: Sweep folds again.
func (e *Engine) fold(ctx context.Context, project ids.ID, parts []partKeys, release ...string) {
	if !e.cluster || project.IsZero() || (len(parts) == 0 && len(release) == 0) {
		return
	}
	cmds := make([]*redis.SliceCmd, len(parts))
	if len(parts) > 0 {
		_, _ = e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range parts {
				cmds[i] = p.HMGet(ctx, k.Bytes, "v", "n", "o")
			}
			return nil
		})
	}
	args := []any{0}
	np := 0
	for i, k := range parts {
		vals, err := cmds[i].Result()
		if err != nil || len(vals) != 3 || vals[0] == nil {
			continue // never counted, or unreadable: Sweep folds it later
		}
		args = append(args, k.Bytes, str(vals[0])+"|"+orZero(vals[1])+"|"+orZero(vals[2]))
		np++
	}
	args[0] = np
	for _, r := range release {
		args = append(args, r)
	}
	if np == 0 && len(release) == 0 {
		return
	}
	keys := []string{projectBytesKey(project), projectReservationsKey(project)}
	if err := bytesFoldScript.Run(ctx, e.rdb, keys, args...).Err(); err != nil {
		e.log.Warn("redisengine: folding stored bytes failed; Sweep will", "project", project.String(), "error", err)
	}
}

func orZero(v any) string {
	if v == nil {
		return "0"
	}
	return str(v)
}

// reserveBytes takes bytes from the project's headroom under limit for a send on Cluster; it
// returns the reservation to release, or errOverQuota.
func (e *Engine) reserveBytes(ctx context.Context, q engine.Queue, bytes int64) (string, error) {
	if !e.cluster || q.MaxStoredBytes <= 0 || q.Project.IsZero() || bytes == 0 {
		return "", nil
	}
	id := ids.New()
	member := id.String() + "|" + strconv.FormatInt(bytes, 10)
	now := e.nowMs()
	ok, err := bytesReserveScript.Run(ctx, e.rdb, []string{projectBytesKey(q.Project), projectReservationsKey(q.Project)},
		now, bytes, q.MaxStoredBytes, member, now+reservationTTL.Milliseconds()).Int()
	if err != nil {
		return "", e.wrap(ctx, "send", err)
	}
	if ok == 0 {
		return "", errOverQuota
	}
	return member, nil
}

// StoredBytes reads the project's total: exact on a single server; on Cluster it includes
// every change whose fold ran (at once after each operation; a crashed replica's within a
// sweep round).
func (e *Engine) StoredBytes(ctx context.Context, project ids.ID) (int64, error) {
	v, err := e.rdb.HGet(ctx, projectBytesKey(project), "t").Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, e.wrap(ctx, "stored bytes", err)
	}
	return max(v, 0), nil
}

// foldQueue folds every partition of q (Sweep, on Cluster).
func (e *Engine) foldQueue(ctx context.Context, q engine.Queue, n int) {
	if !e.cluster || q.Project.IsZero() {
		return
	}
	parts := make([]partKeys, n)
	for p := range n {
		parts[p] = keysOf(q.ID, p)
	}
	e.fold(ctx, q.Project, parts)
}

// deleteCounted removes, with their bytes, the partitions of a deleted queue that hold
// counted messages (their byte hash names the project); DeleteQueue then removes every key.
func (e *Engine) deleteCounted(ctx context.Context, q ids.ID) error {
	cmds := make([]*redis.StringCmd, engine.MaxPartitions)
	if _, err := e.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for p := range engine.MaxPartitions {
			cmds[p] = pipe.HGet(ctx, keysOf(q, p).Bytes, "pj")
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return e.wrap(ctx, "delete queue", err)
	}
	var calls []scriptCall
	byProject := map[ids.ID][]partKeys{}
	for p, cmd := range cmds {
		project, err := ids.ParseUUID(cmd.Val())
		if err != nil || project.IsZero() {
			continue
		}
		k := keysOf(q, p)
		eq := engine.Queue{ID: q, Project: project}
		keys := append([]string{k.Bytes}, k.all()...)
		if e.inline(eq) == "1" {
			keys = append(keys, projectBytesKey(project))
		}
		calls = append(calls, scriptCall{queueDeleteScript, keys, []any{e.inline(eq)}})
		byProject[project] = append(byProject[project], k)
	}
	for _, cmd := range e.run(ctx, calls) {
		if err := cmd.Err(); err != nil {
			return e.wrap(ctx, "delete queue", err)
		}
	}
	for project, parts := range byProject {
		e.fold(ctx, project, parts)
	}
	return nil
}
