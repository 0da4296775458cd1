// The topic calls against a fake fetch speaking docs/topics.md's shapes: what each call sends
// (method, path, query, body) and that it reads the documented answers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueuesClient, QueuesError, type Binding, type Topic } from '../src/index.js';

interface Exchange {
  /** "METHOD /path?query" as sent (the query in the order the client writes it). */
  req: string;
  body?: unknown;
  status?: number;
  answer?: unknown;
}

/** A client whose fetch answers xs in order and fails on any other request. */
function wire(xs: Exchange[]): { c: QueuesClient; done(): void } {
  let next = 0;
  const fake: typeof fetch = async (input, init) => {
    const u = new URL(String(input));
    const x = xs[next++];
    assert.ok(x, `unexpected request ${init?.method} ${u.pathname}${u.search}`);
    assert.equal(`${init?.method ?? 'GET'} ${u.pathname}${u.search}`, x.req);
    assert.deepEqual(init?.body === undefined ? undefined : JSON.parse(String(init.body)), x.body, `body of ${x.req}`);
    const status = x.status ?? 200;
    return new Response(x.answer === undefined ? null : JSON.stringify(x.answer), {
      status,
      headers: { 'content-type': 'application/json' },
    });
  };
  return {
    c: new QueuesClient({ url: 'http://127.0.0.1:1', token: 't', fetch: fake, retry: { maxAttempts: 1 } }),
    done: () => assert.equal(next, xs.length, 'requests made'),
  };
}

const topic: Topic = {
  id: '0193a5b4-3c4d-7e5f-8061-7c8d9e0f1a2b',
  slug: 'top_abc',
  name: 'prices',
  type: 'standard',
  retentionSeconds: 3600,
  createdAt: '2026-12-04T10:00:00Z',
  updatedAt: '2026-12-04T10:00:00Z',
  firstSequence: 1,
  lastSequence: 0,
  storedBytes: 0,
  bindings: 0,
};

const binding: Binding = {
  id: 'b1',
  slug: 'qbd_x',
  queueId: 'q1',
  queue: 'eu',
  topicId: 't1',
  topic: 'prices',
  filter: { attributes: { region: ['eu', 'uk'] } },
  from: '7',
  startSequence: 7,
  sequence: 9,
  lag: 3,
  copied: 2,
  failed: 1,
  lastFailure: { reason: 'queue full', at: '2026-12-04T10:00:01Z' },
  createdAt: '2026-12-04T10:00:00Z',
  updatedAt: '2026-12-04T10:00:02Z',
};

test('topics: create, get, list (and every page), update, delete', async () => {
  const { c, done } = wire([
    { req: 'POST /v1/topics', body: { name: 'prices', retentionSeconds: 3600 }, status: 201, answer: topic },
    {
      req: 'POST /v1/topics',
      body: { name: 'prices' },
      status: 409,
      answer: { error: { code: 'topic_exists', message: 'taken', details: { field: 'name' } } },
    },
    { req: 'GET /v1/topics/a%2Fb', answer: topic },
    { req: 'GET /v1/topics?limit=1&prefix=pr', answer: { topics: [topic], nextCursor: 'c1' } },
    { req: 'GET /v1/topics?prefix=pr', answer: { topics: [topic], nextCursor: 'c1' } },
    { req: 'GET /v1/topics?cursor=c1&prefix=pr', answer: { topics: [topic], nextCursor: null } },
    { req: 'PATCH /v1/topics/prices', body: { retentionSeconds: 0 }, answer: topic },
    { req: 'DELETE /v1/topics/prices', status: 204 },
  ]);
  assert.equal((await c.createTopic({ name: 'prices', retentionSeconds: 3600 })).slug, 'top_abc');
  await assert.rejects(c.createTopic({ name: 'prices' }), (e) => e instanceof QueuesError && e.code === 'topic_exists' && e.status === 409 && e.field === 'name');
  assert.equal((await c.getTopic('a/b')).name, 'prices');
  assert.equal((await c.listTopics({ limit: 1, prefix: 'pr' })).nextCursor, 'c1');
  const all: string[] = [];
  for await (const t of c.allTopics({ prefix: 'pr' })) all.push(t.name);
  assert.deepEqual(all, ['prices', 'prices']);
  await c.updateTopic('prices', { retentionSeconds: 0 });
  await c.deleteTopic('prices');
  done();
});

test('publish: a batch with per-message failures; one message, its failure thrown', async () => {
  const { c, done } = wire([
    {
      req: 'POST /v1/topics/prices/messages',
      body: { messages: [{ body: 'a', attributes: { k: 'v' }, key: 'x', merge: 'patch' }, { body: null, key: 'x' }] },
      answer: {
        messages: [{ index: 0, messageId: 'm0', sequence: 4, duplicate: false }],
        failed: [{ index: 1, error: { code: 'invalid_argument', message: 'no', details: { field: 'messages[1].body' } } }],
      },
    },
    {
      req: 'POST /v1/topics/prices/messages',
      body: { messages: [{ body: 'one' }] },
      answer: { messages: [{ index: 0, messageId: 'm9', sequence: 9, duplicate: false }], failed: [] },
    },
    {
      req: 'POST /v1/topics/ledger.fifo/messages',
      body: { messages: [{ body: 'b', groupId: 'g' }] },
      answer: { messages: [], failed: [{ index: 0, error: { code: 'payload_too_large', message: 'big', details: { field: 'messages[0].body' } } }] },
    },
  ]);
  const r = await c.publishMessages('prices', [
    { body: 'a', attributes: { k: 'v' }, key: 'x', merge: 'patch' },
    { body: null, key: 'x' },
  ]);
  assert.equal(r.messages[0]!.sequence, 4);
  assert.equal(r.failed[0]!.error.details?.field, 'messages[1].body');
  assert.deepEqual(await c.publish('prices', 'one'), { index: 0, messageId: 'm9', sequence: 9, duplicate: false });
  await assert.rejects(c.publish('ledger.fifo', { body: 'b', groupId: 'g' }), (e) => e instanceof QueuesError && e.status === 413 && e.field === 'messages[0].body');
  done();
});

test('bindings: bind (from a sequence, a time), list both ways, get, change the filter, unbind', async () => {
  const { c, done } = wire([
    {
      req: 'POST /v1/queues/eu/sources',
      body: { topic: 'prices', filter: { attributes: { region: ['eu', 'uk'] } }, from: 7 },
      status: 201,
      answer: binding,
    },
    {
      req: 'POST /v1/queues/eu/sources',
      body: { topic: 'prices', from: '2026-12-04T10:00:00.000Z' },
      status: 409,
      answer: { error: { code: 'binding_exists', message: 'bound' } },
    },
    { req: 'POST /v1/queues/us/sources', body: { topic: 'prices' }, status: 201, answer: binding },
    { req: 'GET /v1/queues/eu/sources', answer: { sources: [binding], nextCursor: null } },
    { req: 'GET /v1/topics/prices/bindings', answer: { bindings: [binding], nextCursor: null } },
    { req: 'GET /v1/queues/eu/sources/qbd_x', answer: binding },
    { req: 'PATCH /v1/queues/eu/sources/qbd_x', body: { filter: null }, answer: binding },
    { req: 'PATCH /v1/queues/eu/sources/qbd_x', body: { filter: { attributes: { kind: 'a' } } }, answer: binding },
    { req: 'DELETE /v1/queues/eu/sources/qbd_x', status: 204 },
  ]);
  const b = await c.bind('eu', { topic: 'prices', filter: { attributes: { region: ['eu', 'uk'] } }, from: 7 });
  assert.equal(b.lag, 3);
  assert.equal(b.lastFailure?.reason, 'queue full');
  await assert.rejects(c.bind('eu', { topic: 'prices', from: new Date('2026-12-04T10:00:00Z') }), (e) => e instanceof QueuesError && e.code === 'binding_exists');
  await c.bind('us', { topic: 'prices' });
  assert.equal((await c.listSources('eu'))[0]!.slug, 'qbd_x');
  assert.equal((await c.topicBindings('prices')).length, 1);
  assert.equal((await c.getSource('eu', 'qbd_x')).queue, 'eu');
  await c.updateSourceFilter('eu', 'qbd_x', null);
  await c.updateSourceFilter('eu', 'qbd_x', { attributes: { kind: 'a' } });
  await c.unbind('eu', 'qbd_x');
  done();
});

test('the log and the keyed state: pages, iterators, a key without state', async () => {
  const entry = (sequence: number) => ({ sequence, messageId: `m${sequence}`, body: 'b', attributes: {}, publishedAt: '2026-12-04T10:00:00Z' });
  const state = (key: string) => ({ key, body: '{}', attributes: {}, sequence: 1, publishedAt: '2026-12-04T10:00:00Z' });
  const { c, done } = wire([
    {
      req: 'GET /v1/topics/prices/messages?from=3&to=2026-12-04T10%3A00%3A00.000Z&limit=2&attribute.k=v&attribute.k=w',
      answer: { messages: [entry(3), entry(4)], nextCursor: 'n' },
    },
    { req: 'GET /v1/topics/prices/messages?from=3', answer: { messages: [entry(3)], nextCursor: 'n' } },
    {
      req: 'GET /v1/topics/prices/messages?from=3&cursor=n',
      answer: { messages: [{ ...entry(5), body: null, key: 'x', deleted: true }], nextCursor: null },
    },
    { req: 'GET /v1/topics/prices/state?key=a+b%2F', answer: state('a b/') },
    { req: 'GET /v1/topics/prices/state?key=gone', status: 404, answer: { error: { code: 'not_found', message: 'no state' } } },
    { req: 'GET /v1/topics/prices/state?limit=1', answer: { state: [state('a')], nextCursor: 's' } },
    { req: 'GET /v1/topics/prices/state', answer: { state: [state('a')], nextCursor: 's' } },
    { req: 'GET /v1/topics/prices/state?cursor=s', answer: { state: [state('b')], nextCursor: null } },
  ]);
  const p = await c.readLog('prices', { from: 3, to: new Date('2026-12-04T10:00:00Z'), limit: 2, filter: { k: ['v', 'w'] } });
  assert.deepEqual(p.messages.map((m) => m.sequence), [3, 4]);
  const seqs: number[] = [];
  for await (const e of c.logEntries('prices', { from: 3 })) seqs.push(e.sequence);
  assert.deepEqual(seqs, [3, 5]);
  assert.equal((await c.getState('prices', 'a b/')).key, 'a b/');
  await assert.rejects(c.getState('prices', 'gone'), (e) => e instanceof QueuesError && e.status === 404);
  assert.equal((await c.listState('prices', { limit: 1 })).nextCursor, 's');
  const keys: string[] = [];
  for await (const s of c.allState('prices')) keys.push(s.key);
  assert.deepEqual(keys, ['a', 'b']);
  done();
});
