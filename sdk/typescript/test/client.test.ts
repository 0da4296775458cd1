// The client against a real `queues serve`: every route, the error type, retries. A
// recording fetch notes each call's operation; the last test fails if any operation of
// openapi.yaml was not called through the client.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as sdk from '../src/index.js';
import { QueuesClient, QueuesError, isAuth, isStale, type ReceivedMessage } from '../src/index.js';

// The subclass each code's error must be, written out here rather than read from the SDK, so a
// wrong entry in its table fails every rejects() below that meets the code.
const classOf: Record<string, Function> = {
  invalid_argument: sdk.ValidationError,
  receipt_handle_invalid: sdk.InvalidReceiptError,
  unauthenticated: sdk.AuthError,
  permission_denied: sdk.ForbiddenError,
  not_found: sdk.NotFoundError,
  queue_exists: sdk.ConflictError,
  subscription_exists: sdk.ConflictError,
  topic_exists: sdk.ConflictError,
  binding_exists: sdk.ConflictError,
  message_in_flight: sdk.ConflictError,
  receipt_handle_stale: sdk.StaleReceiptError,
  quota_exceeded: sdk.QuotaExceededError,
  rate_limited: sdk.RateLimitedError,
  purge_too_soon: sdk.RateLimitedError,
  unavailable: sdk.UnavailableError,
  internal: sdk.InternalError,
};
import { operations } from './openapi.js';
import { qname, startServer, until, type Server } from './server.js';

const called = new Set<string>();
const patterns = operations()
  .filter((o) => o.path !== '/metrics' && o.id !== 'streamMessages' && o.id !== 'sendStream' && o.id !== 'streamTopic') // the streams: WebSockets (the receive stream Go only; the topic stream in topicstream.test)
  .map((o) => ({ key: `${o.method} ${o.shape}`, re: new RegExp(`^${o.path.replace(/\{[^}]+\}/g, '[^/]+')}$`), method: o.method }));
const recording: typeof fetch = (input, init) => {
  const u = new URL(String(input));
  const method = init?.method ?? 'GET';
  const p = patterns.find((p) => p.method === method && p.re.test(u.pathname));
  if (p) called.add(p.key);
  return fetch(input, init);
};

let srv: Server;
let op: QueuesClient; // operator
let c: QueuesClient; // a fresh project's every-scope token
let project: string;

before(async () => {
  srv = await startServer();
  op = new QueuesClient({ url: srv.url, token: srv.operatorToken, fetch: recording });
  const p = await op.createProject('sdk-ts client');
  project = p.id;
  const tok = await op.createToken(p.slug, { name: 'all', scopes: ['*'] });
  c = op.withToken(tok.token);
});
after(() => srv?.close());

async function rejects(p: Promise<unknown>, code: string, status: number, field?: string): Promise<QueuesError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof QueuesError, `want QueuesError, got ${e}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.status, status);
    const want = classOf[code];
    assert.ok(want, `the test's table has no class for ${code}`);
    assert.ok(e instanceof want, `${code}: want ${want.name}, got ${e.constructor.name}`);
    assert.equal(e.name, want.name);
    if (field !== undefined) assert.equal(e.field, field);
    assert.ok(e.message.length > 0);
    return e;
  }
  assert.fail(`want ${code}, got success`);
}

describe('projects and tokens', () => {
  test('create, list, get; tokens issue and revoke', async () => {
    const p = await op.createProject({ name: 'second' });
    assert.match(p.slug, /^prj_/);
    const list = await op.listProjects({ limit: 1 });
    assert.equal(list.projects.length, 1);
    assert.notEqual(list.nextCursor, null);
    const got = await op.getProject(p.slug);
    assert.equal(got.id, p.id);
    const tok = await op.createToken(p.id, { name: 'reader', scopes: ['queues:read'], ttlSeconds: 3600 });
    assert.match(tok.slug, /^tok_/);
    assert.ok(tok.expiresAt);
    const reader = op.withToken(tok.token);
    assert.deepEqual((await reader.listQueues()).queues, []);
    const denied = await rejects(reader.createQueue({ name: 'nope' }), 'permission_denied', 403);
    assert.ok(isAuth(denied));
    await op.revokeToken(p.id, tok.slug);
    await until(
      () => reader.listQueues().then(() => false, (e) => e instanceof QueuesError && e.code === 'unauthenticated'),
      10000,
      'the revoked token to be refused',
    );
  });

  test("a token's SQS credentials", async (t) => {
    const tok = await op.createToken(project, { name: 'sqs', scopes: ['*'] });
    let creds;
    try {
      creds = await op.getSQSCredentials(project, tok.id);
    } catch (e) {
      if (e instanceof QueuesError && (e.status === 404 || e.status === 405)) return t.skip('this server has no SQS credentials route yet');
      throw e;
    }
    assert.equal(creds.accessKeyId, tok.slug);
    assert.ok(creds.secretAccessKey.length > 0);
    await rejects(c.getSQSCredentials(project, tok.id), 'permission_denied', 403);
  });

  test('a project token on an operator route is permission_denied', async () => {
    await rejects(c.listProjects(), 'permission_denied', 403);
    await rejects(new QueuesClient({ url: srv.url, token: 'nonsense' }).listQueues(), 'unauthenticated', 401);
  });
});

describe('queues', () => {
  test('create, list, get, update, purge, delete', async () => {
    const dlq = await c.createQueue({ name: qname('dlq') });
    const name = qname('orders');
    const q = await c.createQueue({
      name,
      visibilityTimeoutSeconds: 45,
      redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 3 },
    });
    assert.equal(q.type, 'standard');
    assert.equal(q.redrive?.deadLetterQueue, dlq.id);
    assert.deepEqual(q.counts, { visible: 0, inFlight: 0, delayed: 0, truncated: false, oldestMessageAgeSeconds: 0 });
    const e = await rejects(c.createQueue({ name }), 'queue_exists', 409, 'name');
    assert.ok(e.requestId, 'X-Request-Id is carried');
    await rejects(c.createQueue({ name: qname('x'), visibilityTimeoutSeconds: 99999 }), 'invalid_argument', 400, 'visibilityTimeoutSeconds');

    const page = await c.listQueues({ prefix: name, limit: 10 });
    assert.deepEqual(page.queues.map((x) => x.id), [q.id]);
    assert.equal(page.nextCursor, null);
    const first = await c.listQueues({ limit: 1 });
    assert.notEqual(first.nextCursor, null);
    const all: string[] = [];
    for await (const x of c.allQueues({ limit: 1 })) all.push(x.id);
    assert.ok(all.includes(q.id) && all.includes(dlq.id));

    assert.equal((await c.getQueue(q.slug)).id, q.id);
    const upd = await c.updateQueue(name, { delaySeconds: 5, redrive: null });
    assert.equal(upd.delaySeconds, 5);
    assert.equal(upd.redrive, null);

    await c.send(name, 'x');
    const purged = await c.purgeQueue(name);
    assert.match(purged.purgedAt, /Z$/);
    const again = await rejects(c.purgeQueue(name), 'purge_too_soon', 429);
    assert.ok(again.retryAfter !== undefined && again.retryAfter > 0, 'purge_too_soon carries Retry-After');

    await c.deleteQueue(name);
    await rejects(c.getQueue(name), 'not_found', 404);
  });
});

describe('messages and receipts', () => {
  test('send, receive, browse, ack, visibility, dead-letter (single and batch)', async () => {
    const dlq = await c.createQueue({ name: qname('m-dlq') });
    const name = qname('m');
    await c.createQueue({ name, redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 5 } });

    const r = await c.sendMessages(name, [
      { body: 'a', attributes: { kind: 'x' } },
      { body: 'b', groupId: 'nope' }, // a standard queue rejects groupId: that message only
      { body: 'c' },
      { body: 'd' },
      { body: 'e' },
    ]);
    assert.deepEqual(r.messages.map((m) => m.index), [0, 2, 3, 4]);
    assert.equal(r.failed[0]?.index, 1);
    assert.equal(r.failed[0]?.error.details?.field, 'messages[1].groupId');
    await rejects(c.send(name, { body: 'x', delaySeconds: 345601 }), 'invalid_argument', 400, 'messages[0].delaySeconds');

    const browse = await c.browseMessages(name, { state: 'visible', limit: 2 });
    assert.equal(browse.messages.length, 2);
    assert.notEqual(browse.nextCursor, null);

    const got: ReceivedMessage[] = [];
    while (got.length < 4) got.push(...(await c.receive(name, { maxMessages: 10, waitSeconds: 1 })));
    const by = new Map(got.map((m) => [m.body, m]));
    assert.deepEqual([...by.keys()].sort(), ['a', 'c', 'd', 'e']);
    assert.deepEqual(by.get('a')!.attributes, { kind: 'x' });
    assert.equal(by.get('a')!.receiveCount, 1);
    assert.equal((await c.browseMessages(name, { state: 'inFlight' })).messages.length, 4);

    await c.ack(by.get('a')!.receiptHandle!);
    await rejects(c.ack(by.get('a')!.receiptHandle!), 'receipt_handle_stale', 410);
    await rejects(c.ack('forged'), 'receipt_handle_invalid', 400);
    assert.ok(isStale(await c.ack(by.get('a')!.receiptHandle!).catch((e) => e)));

    // c: released at once and received again; its old handle is stale in a batch.
    await c.changeVisibility(by.get('c')!.receiptHandle!, 0);
    const [c2] = await c.receive(name, { waitSeconds: 1 });
    assert.equal(c2?.body, 'c');
    assert.equal(c2?.receiveCount, 2);
    const errs = await c.ackBatch([by.get('c')!.receiptHandle!, c2!.receiptHandle!]);
    assert.equal(errs[0]?.code, 'receipt_handle_stale');
    assert.equal(errs[1], undefined);

    // d: retried after 600 s (still in flight); e: dead-lettered with a reason.
    const verrs = await c.changeVisibilityBatch([{ receiptHandle: by.get('d')!.receiptHandle!, visibilityTimeoutSeconds: 600 }]);
    assert.deepEqual(verrs, [undefined]);
    await rejects(
      c.changeVisibility(by.get('d')!.receiptHandle!, 43201),
      'invalid_argument',
      400,
      'visibilityTimeoutSeconds',
    );
    await c.deadLetter(by.get('e')!.receiptHandle!, 'bad e');
    const counts = (await c.getQueue(name)).counts;
    assert.equal(counts.inFlight, 1);
    assert.equal(counts.visible, 0);
    const [dl] = await c.receive(dlq.id, { waitSeconds: 1 });
    assert.equal(dl?.body, 'e');
    assert.equal(dl?.deadLetter?.reason, 'bad e');
    assert.equal(dl?.deadLetter?.sourceQueue, (await c.getQueue(name)).id);

    const derrs = await c.deadLetterBatch([{ receiptHandle: by.get('d')!.receiptHandle! }, { receiptHandle: dl!.receiptHandle!, reason: 'r' }]);
    assert.deepEqual(derrs, [undefined, undefined]);
    const [d2] = await c.receive(dlq.id, { waitSeconds: 1 });
    assert.equal(d2?.body, 'd');
    assert.equal(d2?.deadLetter?.reason, 'consumer');
  });

  test('cancel returns a message uncounted; maxCancels bounds it', async () => {
    const dlq = await c.createQueue({ name: qname('cn-dlq') });
    const name = qname('cn');
    const q = await c.createQueue({ name, maxCancels: 1, redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 5 } });
    assert.equal(q.maxCancels, 1);
    await c.send(name, { body: 'x' });
    const [m1] = await c.receive(name, { waitSeconds: 1 });
    await c.cancel(m1!.receiptHandle!);
    const [m2] = await c.receive(name, { waitSeconds: 1 });
    assert.equal(m2?.receiveCount, 1);
    await rejects(c.cancel(m1!.receiptHandle!), 'receipt_handle_stale', 410);
    assert.deepEqual(await c.cancelBatch([m2!.receiptHandle!]), [undefined]); // beyond maxCancels 1
    const [dl] = await c.receive(dlq.id, { waitSeconds: 1 });
    assert.equal(dl?.deadLetter?.reason, 'max_cancels');
  });

  test('maxMessageBytes: a 1 MiB message on a queue that allows it; the setting changes', async () => {
    const plain = await c.createQueue({ name: qname('mb-plain') });
    const name = qname('mb');
    const q = await c.createQueue({ name, maxMessageBytes: 1 << 20 });
    assert.equal(plain.maxMessageBytes, 262144);
    assert.equal(q.maxMessageBytes, 1 << 20);
    const body = 'b'.repeat(1 << 20);
    await c.send(name, { body });
    const [m] = await c.receive(name, { waitSeconds: 1 });
    assert.equal(m?.body.length, body.length);
    assert.equal((await c.updateQueue(name, { maxMessageBytes: 2048 })).maxMessageBytes, 2048);
    await rejects(c.updateQueue(name, { maxMessageBytes: 1023 }), 'invalid_argument', 400, 'maxMessageBytes');
  });

  test('conflation, deliverAt and delete by id', async () => {
    const name = qname('k');
    await c.createQueue({ name });
    const deliverAt = new Date(Date.now() + 3600_000).toISOString();
    const a = await c.send(name, { body: '{"a":1}', key: 'order-7', merge: 'patch', deliverAt });
    assert.equal(a.merged, false);
    const b = await c.send(name, { body: '{"b":2}', key: 'order-7', merge: 'patch' });
    assert.equal(b.merged, true);
    assert.equal(b.messageId, a.messageId);
    const page = await c.browseMessages(name, { state: 'delayed' });
    assert.deepEqual(page.messages.map((m) => m.body), ['{"a":1,"b":2}']);
    await c.deleteMessage(name, a.messageId);
    await rejects(c.deleteMessage(name, a.messageId), 'not_found', 404);
    const v = await c.send(name, 'now');
    const [m] = await c.receive(name, { waitSeconds: 1 });
    assert.equal(m?.messageId, v.messageId);
    await rejects(c.deleteMessage(name, v.messageId), 'message_in_flight', 409);
  });

  test('priority: highest first on receive, shown by browse', async () => {
    const name = qname('p');
    await c.createQueue({ name });
    await c.sendMessages(name, [{ body: 'low' }, { body: 'high', priority: 9 }, { body: 'mid', priority: 4 }]);
    const page = await c.browseMessages(name, { state: 'visible' });
    assert.deepEqual(page.messages.map((m) => `${m.body}/${m.priority}`).sort(), ['high/9', 'low/0', 'mid/4']);
    const got = await c.receive(name, { maxMessages: 10, waitSeconds: 1 });
    assert.deepEqual(got.map((m) => `${m.body}/${m.priority}`), ['high/9', 'mid/4', 'low/0']);
  });

  test('move tasks: delete', async () => {
    const name = qname('mvdel');
    await c.createQueue({ name });
    await c.sendMessages(name, [{ body: 'drop', attributes: { kind: 'x' } }, { body: 'keep' }]);
    let t = await c.startMoveTask(name, { action: 'delete', filter: { attributes: { kind: ['x'] } }, maxMessagesPerSecond: 10000 });
    assert.equal(t.action, 'delete');
    await until(async () => (t = await c.getMoveTask(name, t.id)).status !== 'running', 10000, 'the delete task to finish');
    assert.equal(t.status, 'completed');
    assert.equal(t.moved, 1);
    const got = await c.receive(name, { maxMessages: 10, waitSeconds: 1 });
    assert.deepEqual(got.map((m) => m.body), ['keep']);
  });

  test('move tasks: dry run, redrive, list, get, cancel', async () => {
    const name = qname('mv');
    const dlq = await c.createQueue({ name: `${name}-dlq` });
    const src = await c.createQueue({ name, redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 5 } });
    await c.send(name, { body: 'back', attributes: { kind: 'x' } });
    const [m] = await c.receive(name, { waitSeconds: 1 });
    await c.deadLetter(m!.receiptHandle!, 'poison');
    assert.equal((await c.getQueue(dlq.id)).counts.visible, 1);

    const dry = await c.startMoveTask(dlq.id, { filter: { reason: 'poison' }, dryRun: true });
    assert.equal(dry.dryRun, true);
    assert.equal(dry.status, 'completed');
    assert.equal(dry.toMove, 1);
    assert.equal(dry.moved, 0);
    assert.deepEqual((await c.listMoveTasks(dlq.id)).moveTasks, []); // a small dry run is not stored
    await rejects(c.startMoveTask(dlq.id, { maxMessagesPerSecond: 0 }), 'invalid_argument', 400, 'maxMessagesPerSecond');

    let t = await c.startMoveTask(dlq.id, { filter: { reason: 'poison' }, maxMessagesPerSecond: 10000 });
    assert.equal(t.source, dlq.id);
    assert.equal(t.destination, null);
    assert.equal(t.status, 'running');
    await until(
      async () => (t = await c.getMoveTask(dlq.id, t.id)).status !== 'running',
      10000,
      'the move task to finish',
    );
    assert.equal(t.status, 'completed');
    assert.equal(t.moved, 1);
    assert.equal(t.toMove, 1);
    assert.ok(t.finishedAt);
    const page = await c.listMoveTasks(dlq.id, { limit: 5 });
    assert.deepEqual(page.moveTasks.map((x) => x.id), [t.id]);
    assert.equal(page.nextCursor, null);
    const cancelled = await c.cancelMoveTask(dlq.id, t.id); // finished: answered as it is
    assert.equal(cancelled.status, 'completed');
    await rejects(c.getMoveTask(dlq.id, '00000000-0000-0000-0000-000000000000'), 'not_found', 404);

    const [back] = await c.receive(src.id, { waitSeconds: 1 });
    assert.equal(back?.messageId, m!.messageId);
    assert.equal(back?.body, 'back');
    assert.equal(back?.receiveCount, 1);
    assert.equal(back?.deadLetter ?? null, null);
  });

  test('consumers: a backlog bound, fairness and the list', async () => {
    const name = qname('c');
    const q = await c.createQueue({ name, fairness: 'roundRobin' });
    assert.equal(q.fairness, 'roundRobin');
    await c.sendMessages(name, [{ body: '1' }, { body: '2' }, { body: '3' }]);
    const got = await c.receive(name, { maxMessages: 10, waitSeconds: 0, consumerId: 'w-1', maxBacklog: 2 });
    assert.equal(got.length, 2);
    assert.equal((await c.receive(name, { maxMessages: 10, waitSeconds: 0, consumerId: 'w-1', maxBacklog: 2 })).length, 0);
    await rejects(c.receive(name, { maxBacklog: 2 }), 'invalid_argument', 400);
    const page = await c.listConsumers(name, { limit: 10 });
    assert.equal(page.nextCursor, null);
    assert.equal(page.consumers.length, 1);
    assert.equal(page.consumers[0]!.consumerId, 'w-1');
    assert.equal(page.consumers[0]!.inFlight, 2);
    assert.equal(page.consumers[0]!.maxBacklog, 2);
  });

  test('filter: a filtered receive and browse take only matching messages', async () => {
    const name = qname('flt');
    await c.createQueue({ name });
    await c.sendMessages(name, [
      { body: 'red', attributes: { color: 'red' } },
      { body: 'blue', attributes: { color: 'blue' } },
      { body: 'green', attributes: { color: 'green' } },
    ]);
    const browsed = await c.browseMessages(name, { filter: { color: ['red', 'green'] } });
    assert.deepEqual(browsed.messages.map((m) => m.body).sort(), ['green', 'red']);
    assert.equal(browsed.nextCursor, null);
    const got = await c.receive(name, { maxMessages: 10, waitSeconds: 0, filter: { attributes: { color: 'blue' } } });
    assert.deepEqual(got.map((m) => m.body), ['blue']);
    await rejects(c.receive(name, { filter: { attributes: { color: [] } } }), 'invalid_argument', 400, 'filter.attributes.color');
    const rest = await c.receive(name, { maxMessages: 10, waitSeconds: 0 });
    assert.deepEqual(rest.map((m) => m.body).sort(), ['green', 'red']);
    assert.ok(rest.every((m) => m.receiveCount === 1));
  });

  test('fifo groups: list and delete', async () => {
    const name = qname('f');
    await c.createQueue({ name, type: 'fifo' });
    const sent = await c.sendMessages(name, [
      { body: '1', groupId: 'g1', dedupId: 'd1' },
      { body: '2', groupId: 'g1', dedupId: 'd2' },
      { body: '3', groupId: 'g2', dedupId: 'd3' },
    ]);
    const dup = await c.send(name, { body: '1', groupId: 'g1', dedupId: 'd1' });
    assert.equal(dup.duplicate, true);
    assert.equal(dup.sequenceNumber, sent.messages[0]?.sequenceNumber);
    const [m] = await c.receive(name, { waitSeconds: 1 });
    assert.equal(m?.groupId, 'g1');
    assert.match(m!.sequenceNumber!, /^\d+$/);
    assert.equal(m!.sequenceNumber, sent.messages[0]?.sequenceNumber);
    const groups = await c.listGroups(name, { limit: 10 });
    const g1 = groups.groups.find((g) => g.groupId === 'g1');
    assert.deepEqual(g1, { groupId: 'g1', messages: 2, inFlight: true, consumerId: null, state: 'active', receiveCount: 1, lastError: null });
    await c.deleteGroup(name, 'g1');
    assert.deepEqual((await c.listGroups(name)).groups.map((g) => g.groupId), ['g2']);
  });

  test('fifo poison policy: park, the parked groups, release', async () => {
    const dlq = qname('pd');
    const dl = await c.createQueue({ name: dlq, type: 'fifo' });
    const name = qname('p');
    const q = await c.createQueue({
      name,
      type: 'fifo',
      onDeadLetter: 'park',
      redrive: { deadLetterQueue: dl.id, maxReceiveCount: 5 },
    });
    assert.equal(q.onDeadLetter, 'park');
    await c.sendMessages(name, [
      { body: '1', groupId: 'g' },
      { body: '2', groupId: 'g' },
    ]);
    const [m] = await c.receive(name, { waitSeconds: 1, maxMessages: 1 });
    await c.deadLetter(m!.receiptHandle!, 'poison');
    const parked = [];
    for await (const g of c.allGroups(name, { state: 'parked' })) parked.push(g);
    assert.deepEqual(parked, [{ groupId: 'g', messages: 1, inFlight: false, state: 'parked', receiveCount: 0, lastError: 'poison', consumerId: null }]);
    await c.releaseGroup(name, 'g');
    await assert.rejects(c.releaseGroup(name, 'g'), (e: unknown) => e instanceof sdk.ConflictError && e.code === 'group_not_parked');
    assert.deepEqual((await c.listGroups(name, { state: 'parked' })).groups, []);
  });
});

describe('subscriptions', () => {
  test('create, get, update, rotate-secret, attempts, delete', async () => {
    const name = qname('s');
    await c.createQueue({ name });
    const s = await c.createSubscription(name, { endpoint: 'http://127.0.0.1:9/hook', paused: true, batchSize: 5 });
    assert.match(s.signingSecret, /^whsec_/);
    await rejects(c.createSubscription(name, { endpoint: 'http://127.0.0.1:9/hook' }), 'subscription_exists', 409);
    const got = await c.getSubscription(name);
    assert.equal(got.batchSize, 5);
    assert.equal((got as { signingSecret?: string }).signingSecret, undefined);
    assert.equal((await c.updateSubscription(name, { maxInFlight: 2 })).maxInFlight, 2);
    const rotated = await c.rotateSubscriptionSecret(name);
    assert.notEqual(rotated.signingSecret, s.signingSecret);
    const attempts = await c.listSubscriptionAttempts(name, { limit: 5 });
    assert.deepEqual(attempts, { attempts: [], nextCursor: null });
    await c.deleteSubscription(name);
    await rejects(c.getSubscription(name), 'not_found', 404);
  });
});

describe('project limits and usage', () => {
  test('current project, operator view, limits and usage', async (t) => {
    let cur;
    try {
      cur = await c.getCurrentProject();
    } catch (e) {
      if (e instanceof QueuesError && e.status === 404) return t.skip('this server has no project routes yet');
      throw e;
    }
    assert.equal(cur.id, project);
    assert.equal(typeof cur.limits.maxQueues, 'number');
    assert.equal(typeof cur.usage.queues, 'number');
    const upd = await op.updateProject(project, { limits: { maxQueues: 7 } });
    assert.equal(upd.limits.maxQueues, 7);
    assert.equal((await op.getProject(project)).limits.maxQueues, 7);
    await op.updateProject(project, { limits: { maxQueues: null } });
    // A project of its own at its queue limit: the next queue is a QuotaExceededError naming it.
    const small = await op.createProject('sdk-ts quota');
    const sc = op.withToken((await op.createToken(small.slug, { name: 'all', scopes: ['*'] })).token);
    await op.updateProject(small.id, { limits: { maxQueues: 1 } });
    await sc.createQueue({ name: qname('only') });
    const over = await rejects(sc.createQueue({ name: qname('over') }), 'quota_exceeded', 403);
    assert.equal((over as sdk.QuotaExceededError).limit, 'maxQueues');
    assert.ok(sdk.isQuotaExceeded(over));
    assert.ok(Array.isArray((await c.getCurrentProjectUsage()).usage));
    const from = new Date(Date.now() - 3600_000);
    assert.ok(Array.isArray((await op.getProjectUsage(project, { from, to: new Date() })).usage));
  });
});

describe('topics', () => {
  test('create, list, get, update; bind, publish (the copies arrive), the log, the state; unbind, delete', async () => {
    const name = qname('prices');
    const t = await c.createTopic({ name, retentionSeconds: 3600 });
    assert.match(t.slug, /^top_/);
    assert.equal(t.lastSequence, 0);
    await rejects(c.createTopic({ name }), 'topic_exists', 409, 'name');
    assert.deepEqual((await c.listTopics({ prefix: name })).topics.map((x) => x.id), [t.id]);
    const all: string[] = [];
    for await (const x of c.allTopics({ prefix: name, limit: 1 })) all.push(x.name);
    assert.deepEqual(all, [name]);
    assert.equal((await c.getTopic(t.slug)).id, t.id);
    assert.equal((await c.updateTopic(name, { retentionSeconds: 7200 })).retentionSeconds, 7200);

    const eu = qname('eu');
    const every = qname('every');
    await c.createQueue({ name: eu });
    await c.createQueue({ name: every });
    const b = await c.bind(eu, { topic: name, filter: { attributes: { region: 'eu' } } });
    assert.match(b.slug, /^qbd_/);
    assert.equal(b.from, 'now');
    await c.bind(every, { topic: name, from: 'earliest' });
    await rejects(c.bind(eu, { topic: name }), 'binding_exists', 409);
    assert.equal((await c.listSources(eu))[0]!.id, b.id);
    assert.equal((await c.topicBindings(name)).length, 2);
    assert.equal((await c.getSource(eu, b.slug)).id, b.id);

    const r = await c.publishMessages(name, [
      { body: 'eu-1', attributes: { region: 'eu' } },
      { body: 'bad', groupId: 'g' },
      { body: '{"bid":1}', attributes: { region: 'us' }, key: 'AAPL' },
    ]);
    assert.deepEqual(r.messages.map((m) => m.sequence), [1, 2]);
    assert.equal(r.failed[0]!.error.details?.field, 'messages[1].groupId');
    const one = await c.publish(name, { body: null, key: 'GONE' });
    assert.equal(one.sequence, 3);

    // The fan-out copies each message into the queues whose filter selects it, keeping its id.
    const got = async (queue: string, n: number) => {
      const bodies: string[] = [];
      await until(async () => {
        for (const m of await c.receive(queue, { maxMessages: 10, waitSeconds: 1 })) {
          bodies.push(m.body);
          await c.ack(m.receiptHandle!);
        }
        return bodies.length >= n;
      }, 30000, `${n} copies in ${queue}`);
      return bodies.sort();
    };
    assert.deepEqual(await got(eu, 1), ['eu-1']);
    // The null-body publish that deleted GONE's state is copied too ("published as such").
    assert.deepEqual(await got(every, 3), ['', 'eu-1', '{"bid":1}'].sort());

    const log = await c.readLog(name, { from: 1, limit: 2 });
    assert.deepEqual(log.messages.map((m) => m.sequence), [1, 2]);
    assert.equal(log.messages[0]!.messageId, r.messages[0]!.messageId);
    const seqs: number[] = [];
    for await (const e of c.logEntries(name, { limit: 1 })) seqs.push(e.sequence);
    assert.deepEqual(seqs, [1, 2, 3]);
    assert.deepEqual((await c.readLog(name, { filter: { region: 'us' } })).messages.map((m) => m.sequence), [2]);
    assert.equal((await c.getState(name, 'AAPL')).body, '{"bid":1}');
    await rejects(c.getState(name, 'GONE'), 'not_found', 404);
    assert.deepEqual((await c.listState(name)).state.map((s) => s.key), ['AAPL']);
    const keys: string[] = [];
    for await (const s of c.allState(name)) keys.push(s.key);
    assert.deepEqual(keys, ['AAPL']);

    assert.equal((await c.updateSourceFilter(eu, b.id, null)).filter, null);
    await c.unbind(eu, b.slug);
    assert.deepEqual(await c.listSources(eu), []);
    await c.deleteTopic(name);
    await rejects(c.getTopic(name), 'not_found', 404);
  });

  test('replays: a range of the log into a queue, its copies carrying replayOf; list, get, cancel', async () => {
    const name = qname('replayed-topic');
    const t = await c.createTopic({ name });
    const dst = qname('replayed');
    await c.createQueue({ name: dst });
    await c.publishMessages(name, [{ body: 'one', attributes: { region: 'eu' } }, { body: 'two' }, { body: 'three' }]);
    const dry = await c.startReplay(name, { queue: dst, from: 1, dryRun: true, filter: { attributes: { region: 'eu' } } });
    assert.equal(dry.status, 'completed');
    assert.equal(dry.toMove, 1);
    let r = await c.startReplay(name, { queue: dst, from: '1', to: 2 });
    assert.equal(r.to, 2);
    await until(async () => (r = await c.getReplay(name, r.id)).status !== 'running', 30000, 'the replay to end');
    assert.equal(r.status, 'completed');
    assert.equal(r.moved, 2);
    assert.equal((await c.cancelReplay(name, r.id)).status, 'completed');
    assert.deepEqual((await c.listReplays(name, { limit: 1 })).replays.map((x) => x.id), [r.id]);
    const seqs: number[] = [];
    for (const m of await c.receive(dst, { maxMessages: 10, waitSeconds: 1 })) {
      assert.equal(m.replayOf?.topic, t.id);
      seqs.push(m.replayOf!.sequence);
    }
    assert.deepEqual(seqs.sort(), [1, 2]);
  });
});

describe('operations', () => {
  test('health and readiness', async () => {
    assert.deepEqual(await c.health(), { status: 'ok' });
    assert.deepEqual(await c.ready(), { status: 'ready' });
  });
  test('push JWKS: 404 where the deployment has no public URL', async () => {
    await rejects(c.pushJwks(), 'not_found', 404);
  });
});

describe('retries', () => {
  function scripted(answers: (() => Response)[]) {
    const times: number[] = [];
    const f: typeof fetch = async () => {
      times.push(Date.now());
      return answers.shift()!();
    };
    return { f, times };
  }
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
  const limited = json(429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '1', 'x-request-id': 'r1' });
  const unavailable = json(503, { error: { code: 'unavailable', message: 'busy' } }, { 'retry-after': '0' });

  test('429 and 503 are retried, honouring Retry-After', async () => {
    const { f, times } = scripted([limited, unavailable, json(200, { status: 'ok' })]);
    const cl = new QueuesClient({ url: 'http://127.0.0.1:1', fetch: f });
    assert.deepEqual(await cl.health(), { status: 'ok' });
    assert.equal(times.length, 3);
    assert.ok(times[1]! - times[0]! >= 1000, 'waited for Retry-After: 1');
  });

  test('retries are bounded: attempts and the longest Retry-After', async () => {
    const many = scripted([unavailable, unavailable, unavailable, unavailable, unavailable]);
    const cl = new QueuesClient({ url: 'http://127.0.0.1:1', fetch: many.f, retry: { maxAttempts: 3, minBackoffMs: 1 } });
    await rejects(cl.health(), 'unavailable', 503);
    assert.equal(many.times.length, 3);

    const long = scripted([json(429, { error: { code: 'rate_limited', message: 'x' } }, { 'retry-after': '120' })]);
    const cl2 = new QueuesClient({ url: 'http://127.0.0.1:1', fetch: long.f });
    const e = await rejects(cl2.health(), 'rate_limited', 429);
    assert.equal(e.retryAfter, 120);
    assert.equal(long.times.length, 1);
  });

  test('other errors, purge_too_soon included, are not retried', async () => {
    const s = scripted([json(429, { error: { code: 'purge_too_soon', message: 'x' } }, { 'retry-after': '1' })]);
    await rejects(new QueuesClient({ url: 'http://127.0.0.1:1', fetch: s.f }).purgeQueue('q'), 'purge_too_soon', 429);
    assert.equal(s.times.length, 1);
  });

  test('a non-JSON error answer still gives a QueuesError', async () => {
    const s = scripted([() => new Response('bad gateway', { status: 502 })]);
    const e = await rejects(new QueuesClient({ url: 'http://127.0.0.1:1', fetch: s.f }).health(), 'internal', 502);
    assert.equal(e.message, 'bad gateway');
  });

  test('an abort stops the wait before a retry', async () => {
    const s = scripted([limited, limited]);
    const ac = new AbortController();
    const p = new QueuesClient({ url: 'http://127.0.0.1:1', fetch: s.f }).health({ signal: ac.signal });
    setTimeout(() => ac.abort(new Error('stop')), 50);
    await assert.rejects(p, /stop/);
    assert.equal(s.times.length, 1);
  });
});

test('every openapi.yaml operation was called through the client', () => {
  const missing = patterns.map((p) => p.key).filter((k) => !called.has(k));
  assert.deepEqual(missing, []);
});
