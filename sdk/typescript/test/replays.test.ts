// The replay calls against a fake fetch speaking docs/topics.md's shapes ("Replay"): what each
// call sends (method, path, query, body) and that it reads the documented answers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueuesClient, QueuesError, type Replay, type ReceivedMessage } from '../src/index.js';

interface Exchange {
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
    return new Response(x.answer === undefined ? null : JSON.stringify(x.answer), {
      status: x.status ?? 200,
      headers: { 'content-type': 'application/json' },
    });
  };
  return {
    c: new QueuesClient({ url: 'http://127.0.0.1:1', token: 't', fetch: fake, retry: { maxAttempts: 1 } }),
    done: () => assert.equal(next, xs.length, 'requests made'),
  };
}

const replay: Replay = {
  id: 'r1',
  topicId: 't1',
  topic: 'prices',
  queueId: 'q1',
  queue: 'rebuild',
  from: 3,
  to: 9,
  filter: { attributes: { region: ['eu'] } },
  status: 'running',
  moved: 0,
  toMove: 4,
  failed: 0,
  maxMessagesPerSecond: 50,
  dryRun: false,
  startedAt: '2026-12-04T10:00:00Z',
  finishedAt: null,
};

test('replays: start, list, get, cancel', async () => {
  const done: Replay = { ...replay, status: 'completed', moved: 4, finishedAt: '2026-12-04T10:00:01Z' };
  const { c, done: finished } = wire([
    {
      req: 'POST /v1/topics/prices/replays',
      body: { queue: 'rebuild', from: '3', to: '2026-12-04T11:00:00.000Z', filter: { attributes: { region: 'eu' } }, maxMessagesPerSecond: 50 },
      status: 201,
      answer: replay,
    },
    {
      req: 'POST /v1/topics/prices/replays',
      body: { queue: 'rebuild', from: '1', dryRun: true },
      status: 409,
      answer: { error: { code: 'move_task_running', message: 'busy' } },
    },
    { req: 'GET /v1/topics/prices/replays?limit=1', answer: { replays: [done], nextCursor: null } },
    { req: 'GET /v1/topics/prices/replays/r1', answer: done },
    { req: 'POST /v1/topics/prices/replays/r1/cancel', answer: done },
  ]);
  const r = await c.startReplay('prices', {
    queue: 'rebuild',
    from: 3,
    to: new Date('2026-12-04T11:00:00Z'),
    filter: { attributes: { region: 'eu' } },
    maxMessagesPerSecond: 50,
  });
  assert.equal(r.status, 'running');
  await assert.rejects(c.startReplay('prices', { queue: 'rebuild', from: 1, dryRun: true }), (e: unknown) => {
    assert.ok(e instanceof QueuesError);
    assert.equal(e.code, 'move_task_running');
    return true;
  });
  assert.equal((await c.listReplays('prices', { limit: 1 })).replays[0]?.moved, 4);
  assert.equal((await c.getReplay('prices', 'r1')).finishedAt, '2026-12-04T10:00:01Z');
  assert.equal((await c.cancelReplay('prices', 'r1')).status, 'completed');
  finished();
});

test('a received message carries replayOf', () => {
  const m: ReceivedMessage = { messageId: 'm', body: 'b', attributes: {}, receiveCount: 1, sentAt: '2026-12-04T10:00:00Z', replayOf: { topic: 't1', sequence: 7 } };
  assert.equal(m.replayOf?.sequence, 7);
});
