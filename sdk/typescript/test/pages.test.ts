// Every list's async iterator against a real `queues serve`: with a page size of 1 or 2 it
// yields every item, fetching page after page (counted on the wire) by following nextCursor.
import assert from 'node:assert/strict';
import { createServer, type Server as HTTPServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { QueuesClient } from '../src/index.js';
import { qname, startServer, until, type Server } from './server.js';

let srv: Server;
let c: QueuesClient;
let op: QueuesClient;
// GET paths fetched by c and op, in order.
const gets: string[] = [];
const counting: typeof fetch = (input, init) => {
  if ((init?.method ?? 'GET') === 'GET') gets.push(new URL(String(input)).pathname);
  return fetch(input, init);
};
let hook: HTTPServer | undefined;

before(async () => {
  srv = await startServer();
  op = new QueuesClient({ url: srv.url, token: srv.operatorToken, fetch: counting });
  c = new QueuesClient({ url: srv.url, token: srv.token, fetch: counting });
});
after(async () => {
  hook?.close();
  await srv?.close();
});

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

// pages runs the iteration and answers its items and the GETs of path it made.
async function pages<T>(path: string, it: () => AsyncIterable<T>): Promise<{ items: T[]; pages: number }> {
  const from = gets.length;
  const items = await all(it());
  return { items, pages: gets.slice(from).filter((p) => p === path).length };
}

test('projects, queues, topics', async () => {
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await op.createProject(`pages ${i}`)).id);
  const p = await pages('/v1/projects', () => op.allProjects({ limit: 1 }));
  for (const id of ids) assert.ok(p.items.some((x) => x.id === id), `project ${id}`);
  assert.ok(p.pages >= 3, `${p.pages} pages`);

  const prefix = qname('pg');
  for (let i = 0; i < 3; i++) await c.createQueue({ name: `${prefix}-${i}` });
  const q = await pages('/v1/queues', () => c.allQueues({ prefix, limit: 1 }));
  assert.deepEqual(q.items.map((x) => x.name).sort(), [0, 1, 2].map((i) => `${prefix}-${i}`));
  assert.ok(q.pages >= 3, `${q.pages} pages`);

  for (let i = 0; i < 3; i++) await c.createTopic({ name: `${prefix}-t${i}` });
  const t = await pages('/v1/topics', () => c.allTopics({ prefix, limit: 1 }));
  assert.equal(t.items.length, 3);
  assert.ok(t.pages >= 3);
});

test('browse, consumers, groups', async () => {
  const name = qname('browse');
  const q = await c.createQueue({ name });
  await c.sendMessages(name, [1, 2, 3, 4, 5].map((i) => ({ body: `m${i}` })));
  const b = await pages(`/v1/queues/${name}/messages`, () => c.browseAll(name, { limit: 2 }));
  assert.deepEqual(b.items.map((m) => m.body).sort(), ['m1', 'm2', 'm3', 'm4', 'm5']);
  assert.ok(b.pages >= 3, `${b.pages} pages`);

  for (const w of ['w-1', 'w-2', 'w-3']) await c.receive(name, { maxMessages: 1, waitSeconds: 0, consumerId: w, maxBacklog: 5 });
  const cs = await pages(`/v1/queues/${q.id}/consumers`, () => c.allConsumers(q.id, { limit: 1 }));
  assert.deepEqual(cs.items.map((x) => x.consumerId).sort(), ['w-1', 'w-2', 'w-3']);
  assert.ok(cs.pages >= 3);

  const fifo = `${qname('groups')}.fifo`;
  await c.createQueue({ name: fifo, type: 'fifo' });
  await c.sendMessages(fifo, ['g1', 'g2', 'g3'].map((g, i) => ({ body: g, groupId: g, dedupId: `d${i}` })));
  const g = await pages(`/v1/queues/${fifo}/groups`, () => c.allGroups(fifo, { limit: 1 }));
  assert.deepEqual(g.items.map((x) => x.groupId).sort(), ['g1', 'g2', 'g3']);
  assert.ok(g.pages >= 3);
});

test('move tasks', async () => {
  const dlq = await c.createQueue({ name: qname('mt-dlq') });
  const src = await c.createQueue({ name: qname('mt'), redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 5 } });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    await c.send(src.id, `m${i}`);
    const [m] = await c.receive(src.id, { waitSeconds: 1 });
    await c.deadLetter(m!.receiptHandle!, 'again');
    await until(async () => (await c.getQueue(dlq.id)).counts.visible === 1, 10000, 'the dead letter');
    let t = await c.startMoveTask(dlq.id, { maxMessagesPerSecond: 10000 });
    await until(async () => (t = await c.getMoveTask(dlq.id, t.id)).status !== 'running', 10000, 'the move task');
    ids.push(t.id);
    await c.purgeQueue(src.id).catch(() => undefined);
  }
  const mt = await pages(`/v1/queues/${dlq.id}/move-tasks`, () => c.allMoveTasks(dlq.id, { limit: 1 }));
  assert.deepEqual(mt.items.map((x) => x.id).sort(), ids.sort());
  assert.ok(mt.pages >= 3);
});

test('subscription attempts', async () => {
  hook = createServer((_req, res) => res.writeHead(204).end());
  await new Promise<void>((r) => hook!.listen(0, '127.0.0.1', r));
  const q = await c.createQueue({ name: qname('att') });
  await c.createSubscription(q.id, { endpoint: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`, batchSize: 1 });
  for (let i = 0; i < 3; i++) {
    await c.send(q.id, `p${i}`);
    await until(async () => (await c.listSubscriptionAttempts(q.id)).attempts.length > i, 20000, `attempt ${i + 1}`);
  }
  const a = await pages(`/v1/queues/${q.id}/subscription/attempts`, () => c.allAttempts(q.id, { limit: 1 }));
  assert.equal(a.items.length, 3);
  assert.ok(a.pages >= 3, `${a.pages} pages`);
});

test('replays, the log, the state, bindings and sources', async () => {
  const topic = qname('pt');
  await c.createTopic({ name: topic });
  const eu = await c.createQueue({ name: qname('eu') });
  const us = await c.createQueue({ name: qname('us') });
  await c.bind(eu.id, { topic });
  await c.bind(us.id, { topic });
  await c.publishMessages(topic, ['a', 'b', 'c'].map((k) => ({ body: `{"v":"${k}"}`, key: k })));
  const log = await pages(`/v1/topics/${topic}/messages`, () => c.logEntries(topic, { limit: 1 }));
  assert.deepEqual(log.items.map((e) => e.sequence), [1, 2, 3]);
  assert.ok(log.pages >= 3);
  const st = await pages(`/v1/topics/${topic}/state`, () => c.allState(topic, { limit: 1 }));
  assert.deepEqual(st.items.map((e) => e.key).sort(), ['a', 'b', 'c']);
  assert.ok(st.pages >= 3);

  const dst = await c.createQueue({ name: qname('replayed') });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    let r = await c.startReplay(topic, { queue: dst.id, from: 1, to: 1 });
    await until(async () => (r = await c.getReplay(topic, r.id)).status !== 'running', 20000, 'the replay');
    ids.push(r.id);
  }
  const rp = await pages(`/v1/topics/${topic}/replays`, () => c.allReplays(topic, { limit: 1 }));
  assert.deepEqual(rp.items.map((x) => x.id).sort(), ids.sort());
  assert.ok(rp.pages >= 3);

  assert.deepEqual((await all(c.allBindings(topic))).map((b) => b.queue).sort(), [eu.name, us.name].sort());
  assert.equal((await all(c.allSources(eu.id))).length, 1);
});
