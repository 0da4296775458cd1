// Trace propagation (docs/tracing.md), when the program has OpenTelemetry. The SDK uses only
// `@opentelemetry/api`, an optional peer dependency loaded on first use: a program without it
// sends and starts nothing, and one with it but without a tracer provider (the API's no-op)
// has no valid active span, so nothing is sent either. With both:
//
//   - every request carries the `traceparent` (and `tracestate`) of the active span, so a
//     send stores the producer's context with each message that has no `traceparent` of its
//     own, and the service's spans join the trace — as the Go SDK does;
//   - the consumer and the push receivers run each handler under a `process <queue>`
//     consumer span, the child of the message's `traceparent` (its producer's context), and
//     active while the handler runs (`trace.getActiveSpan()` inside the handler is it).
//
// The types below are the API's, imported for type checking only: the emitted JavaScript
// imports the package dynamically, and a failed import means "no OpenTelemetry".

import type * as OTelAPI from '@opentelemetry/api';
import type { Outcome } from './outcome.js';

type OTel = typeof OTelAPI;

/** The instrumentation scope of the SDK's spans. */
export const TRACER_NAME = '@queueshq/queues';

let loading: Promise<OTel | undefined> | undefined;

// The module specifier is a variable so that bundlers do not insist on resolving an optional
// dependency the program may not have.
const apiModule = '@opentelemetry/api';

// otel loads `@opentelemetry/api` once; undefined when the program does not have it.
function otel(): Promise<OTel | undefined> {
  loading ??= import(apiModule).then(
    (m: OTel & { default?: OTel }) => (m.trace ? m : m.default),
    () => undefined,
  );
  return loading;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * Sets `traceparent` (and `tracestate`, when it has entries) in headers from the active
 * span, when there is a valid one. The format is W3C Trace Context version 00, written here
 * rather than through the global propagator, which a program need not have registered.
 */
export async function injectTraceparent(headers: Record<string, string>): Promise<void> {
  const api = await otel();
  if (!api) return;
  const sc = api.trace.getSpanContext(api.context.active());
  if (!sc || !api.trace.isSpanContextValid(sc)) return;
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, '0');
  headers.traceparent = `00-${sc.traceId}-${sc.spanId}-${flags}`;
  const state = sc.traceState?.serialize();
  if (state) headers.tracestate = state;
}

/** What a process span needs to know of a message. */
export interface Traced {
  messageId: string;
  receiveCount: number;
  traceparent?: string | undefined;
}

/**
 * Runs fn under a `process <queue>` consumer span that is the child of m's traceparent;
 * without OpenTelemetry or a stored traceparent it just runs fn. outcomeOf names the
 * settlement fn's result asks for: a retry or dead-letter sets the span's status to Error
 * with that outcome (as the Go SDK does for a handler's error), a throw also records it.
 */
export async function withProcessSpan<T>(
  queue: string,
  m: Traced,
  fn: () => T | Promise<T>,
  outcomeOf: (r: { value: unknown } | { error: unknown }) => { outcome: Outcome; error?: unknown },
): Promise<T> {
  const match = m.traceparent ? TRACEPARENT.exec(m.traceparent) : null;
  const api = match ? await otel() : undefined;
  if (!api || !match) return fn();
  const parent = api.trace.setSpanContext(api.context.active(), {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: parseInt(match[3]!, 16),
    isRemote: true,
  });
  const span = api.trace.getTracer(TRACER_NAME).startSpan(
    `process ${queue}`,
    {
      kind: api.SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'queues',
        'messaging.operation.type': 'process',
        'messaging.destination.name': queue,
        'messaging.message.id': m.messageId,
        'queues.receive_count': m.receiveCount,
      },
    },
    parent,
  );
  let r: { value: unknown } | { error: unknown } | undefined;
  try {
    const value = await api.context.with(api.trace.setSpan(parent, span), fn);
    r = { value };
    return value;
  } catch (error) {
    r = { error };
    throw error;
  } finally {
    const { outcome, error } = outcomeOf(r!);
    if (error !== undefined) span.recordException(error instanceof Error ? error : String(error));
    if (outcome.kind === 'retry' || outcome.kind === 'dead-letter') {
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: outcome.kind });
    }
    span.end();
  }
}
