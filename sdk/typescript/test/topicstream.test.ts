// The topic stream against a real `queues serve`: reconnecting from the bookmark across a cut
// connection, credit, delta, the attribute filter, a gap, the errors that end it, and which
// WebSocket the SDK picks.
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { QueuesClient, QueuesError, type TopicEvent } from '../src/index.js';
import { webSocketClass } from '../src/topicstream.js';
import { qname, startServer, until, type Server } from './server.js';

let srv: Server;
let c: QueuesClient;
let token: string; // c's: a client through the proxy presents it too

before(async () => {
  srv = await startServer();
  const p = await srv.operator.createProject(qname('sdk-ts stream'));
  token = (await srv.operator.createToken(p.slug, { name: 'all', scopes: ['*'] })).token;
  c = srv.operator.withToken(token);
});
after(() => srv?.close());

/** A TCP proxy to the server whose cut() closes every connection (a dropped network). */
async function cutProxy(target: string): Promise<{ url: string; cut(): void; close(): void }> {
  const t = new URL(target);
  const conns: Socket[] = [];
  const ln = createServer((inbound) => {
    const out = connect(Number(t.port), t.hostname);
    conns.push(inbound, out);
    inbound.pipe(out).on('error', () => undefined);
    out.pipe(inbound).on('error', () => undefined);
    inbound.on('error', () => out.destroy());
    out.on('error', () => inbound.destroy());
  });
  await new Promise<void>((r) => ln.listen(0, '127.0.0.1', r));
  const port = (ln.address() as { port: number }).port;
  const cut = () => conns.splice(0).forEach((s) => s.destroy());
  return { url: `http://127.0.0.1:${port}`, cut, close: () => (cut(), ln.close()) };
}

async function publishRange(topic: string, from: number, to: number): Promise<void> {
  for (let i = from; i <= to; i++) await c.publish(topic, String(i));
}

/** Takes n events from it; fails on the iteration's end. */
async function take(it: AsyncIterator<TopicEvent>, n: number): Promise<TopicEvent[]> {
  const out: TopicEvent[] = [];
  while (out.length < n) {
    const r = await it.next();
    assert.ok(!r.done, `the stream ended after ${out.length} of ${n}`);
    out.push(r.value);
  }
  return out;
}

const bodies = (evs: TopicEvent[]) => evs.map((e) => (e.kind === 'entry' ? `${e.entry.sequence}:${e.entry.body}` : `gap ${e.gap.from}-${e.gap.firstSequence}`));

test('topicStream reconnects from its bookmark when the connection drops: no entry skipped, none twice', async () => {
  const topic = qname('feed');
  await c.createTopic({ name: topic });
  await publishRange(topic, 1, 5);
  const proxy = await cutProxy(srv.url);
  const sc = new QueuesClient({ url: proxy.url, token });
  const it = sc.topicStream(topic, { from: 'earliest', window: 2, maxMessages: 1 })[Symbol.asyncIterator]();
  try {
    assert.deepEqual(bodies(await take(it, 3)), ['1:1', '2:2', '3:3']);
    proxy.cut();
    await publishRange(topic, 6, 8);
    assert.deepEqual(bodies(await take(it, 5)), ['4:4', '5:5', '6:6', '7:7', '8:8']);
  } finally {
    await it.return?.(undefined);
    proxy.close();
  }
});

test('topicStream from now: the next entry published, live', async () => {
  const topic = qname('live');
  await c.createTopic({ name: topic });
  await publishRange(topic, 1, 2);
  const it = c.topicStream(topic);
  const first = it.next(); // reads lastSequence, then opens the stream
  await until(() => it.bookmark === 3, 10000, 'the bookmark of now'); // from here on a publish is in
  await publishRange(topic, 3, 3);
  const r = await first;
  assert.deepEqual(bodies([r.value as TopicEvent]), ['3:3']);
  await it.return?.(undefined);
});

test('credit: the service delivers no more than granted; more as granted', async () => {
  const topic = qname('credit');
  await c.createTopic({ name: topic });
  await publishRange(topic, 1, 5);
  const s = await c.openTopicStream(topic, { from: 1, maxMessages: 100 });
  try {
    s.credit(2);
    assert.deepEqual(bodies((await s.next())!), ['1:1', '2:2']); // five held, two granted: one frame of two
    s.credit(3);
    const rest: TopicEvent[] = [];
    while (rest.length < 3) rest.push(...(await s.next())!);
    assert.deepEqual(bodies(rest), ['3:3', '4:4', '5:5']);
  } finally {
    s.close();
  }
});

test('delta: a keyed entry after the first comes as a merge patch; the filter selects by attribute', async () => {
  const topic = qname('state');
  await c.createTopic({ name: topic });
  await c.publish(topic, { body: '{"a":1,"b":1}', key: 'k' });
  await c.publish(topic, { body: '{"a":1,"b":2}', key: 'k' });
  const got: string[] = [];
  for await (const ev of c.topicStream(topic, { from: 'earliest', delta: true })) {
    assert.equal(ev.kind, 'entry');
    if (ev.kind === 'entry') got.push(`${ev.entry.body} ${ev.entry.delta ?? false}`);
    if (got.length === 2) break;
  }
  assert.deepEqual(got, ['{"a":1,"b":1} false', '{"b":2} true']);

  const colors = qname('colors');
  await c.createTopic({ name: colors });
  for (const [i, color] of ['red', 'blue', 'green', 'red', 'blue', 'red'].entries()) {
    await c.publish(colors, { body: String(i + 1), attributes: { color } });
  }
  const it = c.topicStream(colors, { from: 'earliest', filter: { color: ['red', 'green'] }, window: 1 })[Symbol.asyncIterator]();
  assert.deepEqual(bodies(await take(it, 4)), ['1:1', '3:3', '4:4', '6:6']);
  await it.return?.(undefined);
});

test('a gap: entries trimmed before delivery are announced first, then the stream goes on', async () => {
  const topic = qname('trimmed');
  await c.createTopic({ name: topic, retentionSeconds: 0 });
  await c.publishMessages(topic, [{ body: '1' }, { body: '2' }, { body: '3' }]); // one publish: one trim after it
  // The fan-out trims an idle topic with nothing to keep: wait for it (an event, polled).
  await until(async () => (await c.getTopic(topic)).firstSequence === 4, 30000, 'the log to be trimmed');
  await c.updateTopic(topic, { retentionSeconds: 3600 });
  await publishRange(topic, 4, 5);
  const it = c.topicStream(topic, { from: 2 })[Symbol.asyncIterator]();
  const evs = await take(it, 3);
  assert.deepEqual(bodies(evs), ['gap 2-4', '4:4', '5:5']);
  await it.return?.(undefined);
});

test('errors that end the stream: a missing topic (404), a token without messages:receive (403), a bad from (400)', async () => {
  const it = c.topicStream(qname('nowhere'), { from: 'earliest' });
  await assert.rejects(it.next(), (e) => e instanceof QueuesError && e.code === 'not_found' && e.status === 404);
  const topic = qname('scoped');
  await c.createTopic({ name: topic });
  const me = await c.getCurrentProject();
  const reader = c.withToken((await srv.operator.createToken(me.id, { name: 'r', scopes: ['queues:read'] })).token);
  await assert.rejects(reader.topicStream(topic, { from: 'earliest' }).next(), (e) => e instanceof QueuesError && e.code === 'permission_denied' && e.status === 403);
  await assert.rejects(c.topicStream(topic, { from: 99 }).next(), (e) => e instanceof QueuesError && e.code === 'invalid_argument' && e.field === 'from');
});

test('the abort signal ends the iteration with its reason', async () => {
  const topic = qname('abort');
  await c.createTopic({ name: topic });
  const ac = new AbortController();
  const it = c.topicStream(topic, { signal: ac.signal })[Symbol.asyncIterator]();
  const pending = it.next();
  ac.abort(new Error('stop'));
  await assert.rejects(pending, /stop/);
});

test('webSocketClass: the global WebSocket when the runtime has one, else the ws package', async () => {
  const g = globalThis as unknown as { WebSocket?: unknown };
  const had = g.WebSocket;
  class Fake {}
  try {
    g.WebSocket = Fake;
    assert.equal(await webSocketClass(), Fake);
    delete g.WebSocket;
    const ws = await import('ws');
    assert.equal(await webSocketClass(), ws.WebSocket);
  } finally {
    if (had) g.WebSocket = had;
  }
});

test('a WHATWG WebSocket (no ws extras): the stream works, and a refusal is read by asking the route without the upgrade', async () => {
  const { WebSocket: WS } = await import('ws');
  // Only what browsers and Node ≥ 22 offer: no 'unexpected-response', only 'error'.
  class Whatwg {
    readonly #ws: InstanceType<typeof WS>;
    constructor(url: string, init: { headers: Record<string, string> }) {
      this.#ws = new WS(url, init);
    }
    get readyState(): number {
      return this.#ws.readyState;
    }
    send(d: string): void {
      this.#ws.send(d);
    }
    close(code?: number): void {
      this.#ws.close(code);
    }
    addEventListener(type: string, fn: (ev: unknown) => void): void {
      this.#ws.addEventListener(type as 'message', fn as () => void);
    }
  }
  const g = globalThis as unknown as { WebSocket?: unknown };
  g.WebSocket = Whatwg;
  try {
    const topic = qname('whatwg');
    await c.createTopic({ name: topic });
    await publishRange(topic, 1, 2);
    const it = c.topicStream(topic, { from: 'earliest' })[Symbol.asyncIterator]();
    assert.deepEqual(bodies(await take(it, 2)), ['1:1', '2:2']);
    await it.return?.(undefined);
    const me = await c.getCurrentProject();
    const reader = c.withToken((await srv.operator.createToken(me.id, { name: 'r2', scopes: ['queues:read'] })).token);
    await assert.rejects(reader.topicStream(topic, { from: 'earliest' }).next(), (e) => e instanceof QueuesError && e.code === 'permission_denied' && e.status === 403);
  } finally {
    delete g.WebSocket;
  }
});

test('against a scripted service: reconnects after a drain and an idle error from the bookmark, stops at not_found', async () => {
  const { WebSocketServer } = await import('ws');
  const scripts: (string | number)[][] = [
    ['{"messages":[{"sequence":5,"body":"a"},{"sequence":6,"body":"b"}]}', 1001],
    ['{"gap":{"from":7,"firstSequence":9}}', '{"error":{"code":"idle","message":"no credit for 60 s"}}', 1008],
    ['{"messages":[{"sequence":9,"body":"c","key":"k","delta":true}]}', '{"error":{"code":"not_found","message":"the topic was deleted"}}', 1008],
  ];
  const asked: string[] = [];
  const credits: string[] = [];
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (ws, req) => {
    asked.push(req.url!);
    const script = scripts[asked.length - 1] ?? [];
    ws.once('message', (d) => {
      credits.push(String(d));
      for (const step of script) {
        if (typeof step === 'number') ws.close(step);
        else ws.send(step);
      }
    });
  });
  try {
    const sc = new QueuesClient({ url: `http://127.0.0.1:${(wss.address() as { port: number }).port}`, token: 't' });
    const got: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const ev of sc.topicStream('prices', { from: 5, window: 10, filter: { region: 'eu' } })) {
          got.push(ev.kind === 'entry' ? `${ev.entry.sequence}:${ev.entry.body}:${ev.entry.delta ?? false}` : `gap ${ev.gap.from}-${ev.gap.firstSequence}`);
        }
      })(),
      (e) => e instanceof QueuesError && e.code === 'not_found',
    );
    assert.deepEqual(got, ['5:a:false', '6:b:false', 'gap 7-9', '9:c:true']);
    assert.deepEqual(asked, [
      '/v1/topics/prices/stream?from=5&attribute.region=eu',
      '/v1/topics/prices/stream?from=7&attribute.region=eu', // after the drain: the bookmark
      '/v1/topics/prices/stream?from=9&attribute.region=eu', // after idle: past the gap
    ]);
    assert.deepEqual(credits, ['{"credit":10}', '{"credit":10}', '{"credit":10}']);
  } finally {
    wss.close();
  }
});
