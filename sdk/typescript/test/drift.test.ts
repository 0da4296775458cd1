// The SDK against openapi.yaml: generated types current, every operation a client method.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { QueuesClient, routes } from '../src/index.js';
import { operations, shape, specPath } from './openapi.js';
import { topicStreamURL } from '../src/topicstream.js';
import { pkgRoot } from './server.js';

test('src/openapi.ts is what scripts/gen-types.mjs makes from openapi.yaml now', async () => {
  const gen = (await import(join(pkgRoot, 'scripts', 'gen-types.mjs'))) as { generate(spec: string): string };
  const want = gen.generate(readFileSync(specPath, 'utf8'));
  const have = readFileSync(join(pkgRoot, 'src', 'openapi.ts'), 'utf8');
  assert.equal(have, want, 'src/openapi.ts is out of date with openapi.yaml: run `npm run gen`');
});

test('every /v1 and health operation of openapi.yaml has a route and client methods', () => {
  // /metrics is on the admin listener. The receive stream is a WebSocket (docs/streaming.md):
  // the Go SDK's Consume uses it; this SDK receives by polling, as the stream's fallback is.
  // The send stream likewise (the Go SDK's Producer); this SDK sends over HTTP, its fallback.
  // The topic stream is here (topicStream, openTopicStream).
  const ops = operations().filter((o) => o.path !== '/metrics' && o.id !== 'streamMessages' && o.id !== 'sendStream');
  assert.ok(ops.length >= 27, `only ${ops.length} operations read from openapi.yaml`);
  const proto = QueuesClient.prototype as unknown as Record<string, unknown>;
  for (const op of ops) {
    const r = Object.values(routes).find((r) => r.method === op.method && shape(r.path) === op.shape);
    assert.ok(r, `${op.id} (${op.method} ${op.path}) has no entry in src/routes.ts`);
    for (const m of r.client) assert.equal(typeof proto[m], 'function', `QueuesClient.${m} (for ${op.id}) is missing`);
  }
});

test('every route in src/routes.ts names client methods that exist', () => {
  const proto = QueuesClient.prototype as unknown as Record<string, unknown>;
  for (const [name, r] of Object.entries(routes)) {
    assert.ok(r.client.length > 0, name);
    for (const m of r.client) assert.equal(typeof proto[m], 'function', `QueuesClient.${m} (route ${name})`);
  }
});

test("every operation's query parameters reach the wire", async () => {
  // Each client method built on a route with query parameters passes each of them; a fake
  // fetch records the URL so that a parameter added to openapi.yaml fails here until it does.
  const seen = new Map<string, Set<string>>();
  const fake: typeof fetch = async (input) => {
    const u = new URL(String(input));
    const keys = seen.get(u.pathname) ?? new Set<string>();
    u.searchParams.forEach((_, k) => keys.add(k));
    seen.set(u.pathname, keys);
    return new Response('{"projects":[],"queues":[],"messages":[],"groups":[],"consumers":[],"attempts":[],"moveTasks":[],"usage":[],"topics":[],"state":[],"nextCursor":null}', {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  };
  const c = new QueuesClient({ url: 'http://127.0.0.1:1', token: 't', fetch: fake });
  await c.listProjects({ limit: 1, cursor: 'c' });
  await c.listQueues({ limit: 1, cursor: 'c', prefix: 'p' });
  await c.browseMessages('q', { state: 'visible', limit: 1, cursor: 'c' });
  await c.listGroups('q', { limit: 1, cursor: 'c', state: 'parked' });
  await c.listConsumers('q', { limit: 1, cursor: 'c' });
  await c.listSubscriptionAttempts('q', { limit: 1, cursor: 'c' });
  await c.listMoveTasks('q', { limit: 1, cursor: 'c' });
  await c.listReplays('t', { limit: 1, cursor: 'c' });
  await c.getProjectUsage('p', { from: '2026-01-01T00:00:00Z', to: new Date() });
  await c.getCurrentProjectUsage({ from: new Date(0), to: '2026-01-01T00:00:00Z' });
  await c.listTopics({ limit: 1, cursor: 'c', prefix: 'p' });
  await c.readLog('t', { from: 1, to: 2, limit: 1, cursor: 'c' });
  await c.listState('t', { limit: 1, cursor: 'c' });
  await c.getState('t', 'k');
  const concrete: Record<string, string> = {
    '/v1/projects': '/v1/projects',
    '/v1/queues': '/v1/queues',
    '/v1/queues/{}/messages': '/v1/queues/q/messages',
    '/v1/queues/{}/groups': '/v1/queues/q/groups',
    '/v1/queues/{}/consumers': '/v1/queues/q/consumers',
    '/v1/queues/{}/subscription/attempts': '/v1/queues/q/subscription/attempts',
    '/v1/queues/{}/move-tasks': '/v1/queues/q/move-tasks',
    '/v1/topics/{}/replays': '/v1/topics/t/replays',
    '/v1/projects/{}/usage': '/v1/projects/p/usage',
    '/v1/project/usage': '/v1/project/usage',
    '/v1/topics': '/v1/topics',
    '/v1/topics/{}/messages': '/v1/topics/t/messages',
    '/v1/topics/{}/state': '/v1/topics/t/state',
  };
  // The receive stream (streamMessages) is a WebSocket this SDK does not call; see above. The
  // topic stream's URL is not fetched: its parameters are checked on topicStreamURL below.
  for (const op of operations().filter((o) => o.method === 'GET' && o.query.length > 0 && o.id !== 'streamMessages' && o.id !== 'sendStream' && o.id !== 'streamTopic')) {
    const p = concrete[op.shape];
    assert.ok(p, `${op.id} has query parameters (${op.query}); add its call to this test`);
    for (const q of op.query) assert.ok(seen.get(p)?.has(q), `${op.id}: the client never sends ?${q}`);
  }
});

test("the topic stream's query parameters reach its URL", () => {
  const op = operations().find((o) => o.id === 'streamTopic');
  assert.ok(op, 'openapi.yaml has no streamTopic');
  const u = new URL(topicStreamURL('http://h', 't', { from: 7, delta: true, maxMessages: 5, filter: { region: ['eu', 'uk'] } }));
  assert.equal(u.protocol, 'ws:');
  assert.deepEqual(u.searchParams.getAll('attribute.region'), ['eu', 'uk']);
  for (const q of op.query) {
    const name = q.replace(/<[^>]+>|\{[^}]+\}/, 'region');
    assert.ok(u.searchParams.has(name), `streamTopic: topicStreamURL never sends ?${q}`);
  }
});
