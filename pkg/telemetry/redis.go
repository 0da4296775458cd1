package telemetry

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// RedisHook is a go-redis hook that makes one client span per Lua script call, named
// "EVALSHA <script>" from scripts (SHA-1 → name, redisengine.ScriptNames), pipelined calls
// included (each gets its own span over the pipeline's round trip). Other commands are not
// traced: the engine's work is its scripts. Add it only when Enabled.
func RedisHook(scripts map[string]string) redis.Hook { return redisHook{scripts: scripts} }

type redisHook struct{ scripts map[string]string }

func (redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		op, name, ok := h.script(cmd)
		if !ok {
			return next(ctx, cmd)
		}
		ctx, span := h.start(ctx, op, name)
		err := next(ctx, cmd)
		endRedis(span, cmd.Err())
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var spans []trace.Span
		var traced []redis.Cmder
		for _, cmd := range cmds {
			if op, name, ok := h.script(cmd); ok {
				_, span := h.start(ctx, op, name)
				spans, traced = append(spans, span), append(traced, cmd)
			}
		}
		err := next(ctx, cmds)
		for i, span := range spans {
			endRedis(span, traced[i].Err())
		}
		return err
	}
}

// script reports whether cmd runs a script, and which.
func (h redisHook) script(cmd redis.Cmder) (op, name string, ok bool) {
	switch op = strings.ToUpper(cmd.Name()); op {
	case "EVALSHA", "EVALSHA_RO":
		args := cmd.Args()
		if len(args) > 1 {
			if sha, _ := args[1].(string); h.scripts[sha] != "" {
				return op, h.scripts[sha], true
			}
		}
		return op, "unknown", true
	case "EVAL", "EVAL_RO":
		return op, "script", true
	}
	return "", "", false
}

func (h redisHook) start(ctx context.Context, op, name string) (context.Context, trace.Span) {
	ctx, span := Tracer().Start(ctx, op+" "+name, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("db.system.name", "redis"),
			attribute.String("db.operation.name", op),
			attribute.String("queues.script", name),
		)
	}
	return ctx, span
}

func endRedis(span trace.Span, err error) {
	if err != nil && err != redis.Nil && span.IsRecording() {
		// The error's text is the script's refusal or Redis's, never a key or a value.
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
