package redisengine

import "maps"

// scriptNames maps each script's SHA-1 (what EVALSHA sends) to its file name, so that a
// tracing hook on the Redis client can name a script call's span (package telemetry).
var scriptNames = map[string]string{}

// ScriptNames returns the engine's scripts by SHA-1: file name without ".lua".
func ScriptNames() map[string]string { return maps.Clone(scriptNames) }
