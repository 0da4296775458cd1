package redisengine

import (
	"maps"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/telemetry"
)

// scriptNames maps each script's SHA-1 (what EVALSHA sends) to its file name, so that the
// tracing hook names a script call's span "EVALSHA <name>".
var scriptNames = map[string]string{}

// ScriptNames returns the engine's scripts by SHA-1: file name without ".lua".
func ScriptNames() map[string]string { return maps.Clone(scriptNames) }

// traceScripts adds the tracing hook to the engine's own client when tracing is on (the
// engine talks through a copy of the caller's client, which has none of its hooks; see
// noretry.go). With tracing off the client is left as it is: no cost per call.
func traceScripts(rdb redis.UniversalClient) {
	if telemetry.Enabled() {
		rdb.AddHook(telemetry.RedisHook(scriptNames))
	}
}
