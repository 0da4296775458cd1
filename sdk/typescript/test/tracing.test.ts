// Trace propagation with the real @opentelemetry/api and an in-memory exporter, against a real
// `queues serve` (which does not trace itself: the stored context is the request's header as
// sent, docs/tracing.md): a send carries the active span's traceparent, a consumer's and a
// push receiver's handlers run under `process <queue>` spans that are children of it.
import assert from 'node:assert/strict';
import { createServer, type Server as HTTPServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { SpanKind, SpanStatusCode, trace, type SpanContext } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { QueuesClient, TRACER_NAME, createNodePushHandler, deadLetter } from '../src/node.js';
import { qname, startServer, until, type Server } from './server.js';

let srv: Server;
const exporter = new InMemorySpanExporter();
// The headers of every request the client sent.
const sent: Record<string, string>[] = [];
let c: QueuesClient;

before(async () => {
  srv = await startServer();
  c = new QueuesClient({
    url: srv.url,
    token: srv.token,
    fetch: (input, init) => {
      sent.push({ ...(init?.headers as Record<string, string>) });
      return fetch(input, init);
    },
  });
});
after(() => srv?.close());

const tp = (sc: SpanContext) => `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags}`;

function spans(name: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.name === name);
}

// Runs first, before any tracer provider is registered: the API is there but its tracer is a
// no-op, so no active span is valid and nothing is sent.
test('without a tracer provider nothing is propagated', async () => {
  const q = qname('off');
  await c.createQueue({ name: q });
  sent.length = 0;
  await trace.getTracer('test').startActiveSpan('produce', async (span) => {
    await c.send(q, 'untraced');
    span.end();
  });
  assert.ok(sent.length > 0 && sent.every((h) => !('traceparent' in h)), JSON.stringify(sent));
  const [m] = (await c.browseMessages(q)).messages;
  assert.equal(m?.traceparent, undefined);
});

test('with a provider: send carries the producer span, consume runs under its child', async () => {
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register(); // the AsyncLocalStorage context manager and the W3C propagator
  const q = qname('traced');
  await c.createQueue({ name: q });

  // A call outside any span carries nothing.
  sent.length = 0;
  await c.getQueue(q);
  assert.equal(sent[0]?.traceparent, undefined);

  let producer!: SpanContext;
  await trace.getTracer('test').startActiveSpan('produce', async (span) => {
    producer = span.spanContext();
    sent.length = 0;
    await c.send(q, 'traced');
    span.end();
  });
  assert.equal(sent[0]?.traceparent, tp(producer), 'the send request carries the producer span');
  const [stored] = (await c.browseMessages(q)).messages;
  assert.equal(stored?.traceparent, tp(producer), 'the message stores it');

  // A message's own traceparent wins over the header.
  const own = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  await trace.getTracer('test').startActiveSpan('produce-own', async (span) => {
    await c.send(q, { body: 'own', traceparent: own });
    span.end();
  });

  const ac = new AbortController();
  const seen = new Map<string, SpanContext | undefined>();
  const done = c.consume(
    q,
    (m) => {
      seen.set(m.body, trace.getActiveSpan()?.spanContext());
      if (seen.size === 2) setImmediate(() => ac.abort());
      return m.body === 'own' ? deadLetter('test') : undefined;
    },
    { waitSeconds: 1, signal: ac.signal },
  );
  const safety = setTimeout(() => ac.abort(), 20000); // fail by the assertions, not a hang
  await done;
  clearTimeout(safety);

  const processed = spans(`process ${q}`);
  assert.equal(processed.length, 2, processed.map((s) => s.name).join());
  const first = processed.find((s) => s.attributes['messaging.message.id'] === stored!.messageId)!;
  assert.ok(first, 'a process span for the traced message');
  assert.equal(first.kind, SpanKind.CONSUMER);
  assert.equal(first.spanContext().traceId, producer.traceId);
  assert.equal(first.parentSpanContext?.spanId, producer.spanId, "the process span is the producer's child");
  assert.equal(first.instrumentationScope.name, TRACER_NAME);
  assert.deepEqual(first.attributes, {
    'messaging.system': 'queues',
    'messaging.operation.type': 'process',
    'messaging.destination.name': q,
    'messaging.message.id': stored!.messageId,
    'queues.receive_count': 1,
  });
  assert.equal(first.status.code, SpanStatusCode.UNSET);
  assert.equal(seen.get('traced')?.spanId, first.spanContext().spanId, 'the span is active in the handler');

  const second = processed.find((s) => s !== first)!;
  assert.equal(second.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c');
  assert.equal(second.parentSpanContext?.spanId, 'b7ad6b7169203331');
  assert.deepEqual(second.status, { code: SpanStatusCode.ERROR, message: 'dead-letter' });
});

test('a push receiver runs each pushed message under a child of its traceparent', async () => {
  const q = await c.createQueue({ name: qname('pushed') });
  const got: string[] = [];
  let secret = '';
  const receiver = (req: Parameters<ReturnType<typeof createNodePushHandler>>[0], res: Parameters<ReturnType<typeof createNodePushHandler>>[1]) =>
    void createNodePushHandler({
      secrets: [secret],
      handler: (m) => {
        got.push(m.body);
      },
    })(req, res);
  const http: HTTPServer = createServer(receiver);
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  try {
    const endpoint = `http://127.0.0.1:${(http.address() as AddressInfo).port}/hook`;
    const sub = await c.createSubscription(q.id, { endpoint, paused: true });
    secret = sub.signingSecret;
    let producer!: SpanContext;
    await trace.getTracer('test').startActiveSpan('produce', async (span) => {
      producer = span.spanContext();
      await c.send(q.id, 'pushed');
      span.end();
    });
    await c.updateSubscription(q.id, { paused: false });
    await until(() => got.length === 1 && spans(`process ${q.name}`).length === 1, 15000, 'the push');
    const [s] = spans(`process ${q.name}`);
    assert.equal(s!.kind, SpanKind.CONSUMER);
    assert.equal(s!.spanContext().traceId, producer.traceId);
    assert.equal(s!.parentSpanContext?.spanId, producer.spanId);
    assert.equal(s!.attributes['messaging.destination.name'], q.name);
  } finally {
    await new Promise((r) => http.close(r));
  }
});
