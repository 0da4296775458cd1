// verify() edge cases, and both push receivers behind a real subscription of a real
// `queues serve` pushing to a local HTTP server.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HTTPServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  WebhookVerificationError,
  createNodePushHandler,
  createPushHandler,
  deadLetter,
  defer,
  retryAfter,
  sign,
  verify as verifySync,
  type PushedMessage,
  type PushHandler,
  type PushReceiverOptions,
} from '../src/node.js';
import { signAsync, verifyAsync } from '../src/index.js';
import { qname, startServer, until, type Server } from './server.js';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;

function signed(sec: string | string[], body: string, ts = Math.floor(Date.now() / 1000), id = 'msg_1') {
  const secs = typeof sec === 'string' ? [sec] : sec;
  return {
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': secs.map((s) => sign(s, id, ts, body)).join(' '),
  };
}

async function reason(f: () => unknown): Promise<string> {
  try {
    await f();
  } catch (e) {
    assert.ok(e instanceof WebhookVerificationError, String(e));
    return e.reason;
  }
  return 'verified';
}

// The edge cases hold for the core's WebCrypto verifyAsync and node's synchronous verify alike.
for (const [name, verify] of [
  ['verifyAsync (WebCrypto, the core)', verifyAsync],
  ['verify (node:crypto, ./node)', verifySync],
] as const) {
  describe(name, () => {
    const s1 = secret();
    const s2 = secret();
    const body = '{"messages":[]}';

    test('a good signature verifies, from Headers, a header object, string or bytes', async () => {
      const h = signed(s1, body);
      assert.equal(await reason(() => verify(s1, h, body)), 'verified');
      assert.equal(await reason(() => verify([s1], new Headers(h), new TextEncoder().encode(body))), 'verified');
      assert.equal(await reason(() => verify(s1, { 'Webhook-Id': h['webhook-id'], ...h }, Buffer.from(body))), 'verified');
    });

    test('a wrong secret, a changed body or id, a malformed signature do not', async () => {
      const h = signed(s1, body);
      assert.equal(await reason(() => verify(s2, h, body)), 'no_matching_signature');
      assert.equal(await reason(() => verify(s1, h, body + ' ')), 'no_matching_signature');
      assert.equal(await reason(() => verify(s1, { ...h, 'webhook-id': 'msg_2' }, body)), 'no_matching_signature');
      assert.equal(await reason(() => verify(s1, { ...h, 'webhook-signature': h['webhook-signature'].replace('v1,', 'v2,') }, body)), 'no_matching_signature');
      assert.equal(await reason(() => verify(s1, { ...h, 'webhook-signature': 'v1,AAAA' }, body)), 'no_matching_signature');
      assert.equal(await reason(() => verify(s1, { ...h, 'webhook-signature': 'garbage' }, body)), 'no_matching_signature');
    });

    test('the timestamp must be within the tolerance, either way', async () => {
      const now = Math.floor(Date.now() / 1000);
      assert.equal(await reason(() => verify(s1, signed(s1, body, now - 301), body)), 'stale_timestamp');
      assert.equal(await reason(() => verify(s1, signed(s1, body, now + 301), body)), 'stale_timestamp');
      assert.equal(await reason(() => verify(s1, signed(s1, body, now - 299), body)), 'verified');
      assert.equal(await reason(() => verify(s1, signed(s1, body, now - 50), body, { toleranceSeconds: 10 })), 'stale_timestamp');
      const fixed = () => (now - 1000) * 1000;
      assert.equal(await reason(() => verify(s1, signed(s1, body, now - 1000), body, { now: fixed })), 'verified');
      assert.equal(await reason(() => verify(s1, { ...signed(s1, body), 'webhook-timestamp': '12.5' }, body)), 'bad_timestamp');
    });

    test('missing headers and bad secrets', async () => {
      const h = signed(s1, body);
      for (const k of Object.keys(h)) {
        const partial: Record<string, string> = { ...h };
        delete partial[k];
        assert.equal(await reason(() => verify(s1, partial, body)), 'missing_headers');
      }
      assert.equal(await reason(() => verify('not-a-secret', h, body)), 'bad_secret');
      assert.equal(await reason(() => verify('whsec_', h, body)), 'bad_secret');
    });

    test('rotation: either secret verifies a push signed by both; an unset previous is skipped', async () => {
      const both = signed([s2, s1], body);
      assert.equal(await reason(() => verify([s2], both, body)), 'verified');
      assert.equal(await reason(() => verify([s1], both, body)), 'verified');
      assert.equal(await reason(() => verify([s2, s1], signed(s1, body), body)), 'verified', 'the previous secret still verifies');
      assert.equal(await reason(() => verify([s2, undefined, ''], signed(s2, body), body)), 'verified');
      assert.equal(await reason(() => verify([secret(), secret()], both, body)), 'no_matching_signature');
    });
  });
}

test('signAsync makes the signature sign makes', async () => {
  const s = secret();
  const ts = Math.floor(Date.now() / 1000);
  for (const body of ['', '{"messages":[]}', 'ü€😀']) assert.equal(await signAsync(s, 'msg_x', ts, body), sign(s, 'msg_x', ts, body));
});

describe('handlePush through createPushHandler (fetch)', () => {
  const s = secret();
  const msg = (id: string, body: string, groupId?: string): PushedMessage => ({
    messageId: id,
    body,
    attributes: {},
    receiveCount: 1,
    sentAt: new Date().toISOString(),
    receiptHandle: `h-${id}`,
    visibilityDeadline: new Date().toISOString(),
    ...(groupId ? { groupId } : {}),
  });
  const batch = JSON.stringify({
    subscription: 'qsb_x',
    queue: { id: 'q', name: 'q' },
    messages: [msg('1', 'ok'), msg('2', 'later'), msg('3', 'dead'), msg('4', 'defer'), msg('5', 'throw'), msg('6', 'g', 'A'), msg('7', 'g', 'A')],
  });
  const order: string[] = [];
  const handler = createPushHandler({
    secrets: s,
    handler: async (m) => {
      if (m.groupId) {
        order.push(`start ${m.messageId}`);
        await new Promise((r) => setTimeout(r, 10));
        order.push(`end ${m.messageId}`);
      }
      switch (m.body) {
        case 'later':
          return retryAfter(30);
        case 'dead':
          return deadLetter('nope');
        case 'defer':
          return defer();
        case 'throw':
          throw new Error('x');
      }
    },
  });
  const post = (headers: Record<string, string>, body: string, method = 'POST') =>
    handler(new Request('http://r/hook', { method, headers, ...(method === 'POST' ? { body } : {}) }));

  test('answers each message’s outcome; a group runs in order', async () => {
    const res = await post(signed(s, batch), batch);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      results: [
        { messageId: '1', outcome: 'ack' },
        { messageId: '2', outcome: 'retry', retryAfterSeconds: 30 },
        { messageId: '3', outcome: 'dead-letter', reason: 'nope' },
        { messageId: '4', outcome: 'defer' },
        { messageId: '5', outcome: 'retry' },
        { messageId: '6', outcome: 'ack' },
        { messageId: '7', outcome: 'ack' },
      ],
    });
    assert.deepEqual(order, ['start 6', 'end 6', 'start 7', 'end 7']);
  });

  test('401 when the signature does not verify, 405 for a GET, 400 for a non-batch', async () => {
    assert.equal((await post(signed(secret(), batch), batch)).status, 401);
    assert.equal((await post(signed(s, batch, Math.floor(Date.now() / 1000) - 3600), batch)).status, 401);
    assert.equal((await post({}, '', 'GET')).status, 405);
    assert.equal((await post(signed(s, '[1]'), '[1]')).status, 400);
  });
});

// A real subscription pushing to a local HTTP server.
let srv: Server;
const hooks: HTTPServer[] = [];

before(async () => {
  srv = await startServer();
});
after(async () => {
  for (const h of hooks) h.close();
  await srv?.close();
});

async function listen(fn: (req: IncomingMessage, res: import('node:http').ServerResponse) => void): Promise<string> {
  const h = createServer(fn);
  hooks.push(h);
  await new Promise<void>((r) => h.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(h.address() as AddressInfo).port}/hook`;
}

// fetchServer runs a fetch-style handler behind Node's http module, as a runtime would.
function fetchServer(handler: (req: Request) => Promise<Response>) {
  return listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    const r = await handler(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) }));
    const out: Record<string, string> = {};
    r.headers.forEach((v, k) => (out[k] = v));
    res.writeHead(r.status, out);
    res.end(Buffer.from(await r.arrayBuffer()));
  });
}

async function pushedQueue(kind: 'node' | 'fetch', handler: PushHandler, secrets?: (s: string) => string[]) {
  const c = srv.client;
  const dlq = await c.createQueue({ name: qname(`${kind}-dlq`) });
  const q = await c.createQueue({ name: qname(kind), redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 10 } });
  let opts: PushReceiverOptions = { secrets: [], handler };
  const endpoint = kind === 'node' ? await listen((req, res) => void createNodePushHandler(opts)(req, res)) : await fetchServer((r) => createPushHandler(opts)(r));
  const sub = await c.createSubscription(q.id, { endpoint, paused: true });
  opts = { ...opts, secrets: secrets ? secrets(sub.signingSecret) : [sub.signingSecret] };
  return { q, dlq, sub, setSecrets: (s: string[]) => (opts = { ...opts, secrets: s }) };
}

for (const kind of ['node', 'fetch'] as const) {
  test(`${kind} receiver: a real push is verified and each outcome applied`, async () => {
    const c = srv.client;
    const seen = new Map<string, PushedMessage>();
    let acked = false;
    const { q, dlq } = await pushedQueue(kind, async (m, ctx) => {
      seen.set(m.body, m);
      assert.ok(ctx.batch.subscription.startsWith('qsb_'));
      switch (m.body) {
        case 'later':
          return retryAfter(600);
        case 'dead':
          return deadLetter('receiver says no');
        case 'defer':
          // Answer now, settle later: by the receipt handle, with no credential.
          setTimeout(() => void c.ack(m.receiptHandle!).then(() => (acked = true)), 50);
          return defer();
      }
    });
    await c.sendMessages(q.id, [{ body: 'ok' }, { body: 'later' }, { body: 'dead' }, { body: 'defer' }]);
    await c.updateSubscription(q.id, { paused: false });
    await until(() => seen.size === 4 && acked, 15000, 'four pushed messages');
    await until(async () => (await c.getQueue(q.id)).counts.inFlight === 1, 10000, 'settlement');
    const left = (await c.browseMessages(q.id, { state: 'inFlight' })).messages;
    assert.deepEqual(left.map((m) => m.body), ['later']);
    assert.ok(Date.parse(left[0]!.visibleAt) > Date.now() + 500_000);
    assert.equal((await c.getQueue(q.id)).counts.visible, 0);
    const [d] = (await c.browseMessages(dlq.id)).messages;
    assert.equal(d?.body, 'dead');
    assert.equal(d?.deadLetter?.reason, 'receiver says no');
    const attempts = (await c.listSubscriptionAttempts(q.id)).attempts;
    assert.ok(attempts.some((a) => a.outcome === 'settled' && a.statusCode === 200));
  });
}

test('a receiver with the wrong secret answers 401 and nothing is acknowledged', async () => {
  const c = srv.client;
  let handled = 0;
  const { q } = await pushedQueue('node', () => void handled++, () => [secret()]);
  await c.send(q.id, 'x');
  await c.updateSubscription(q.id, { paused: false });
  await until(async () => (await c.listSubscriptionAttempts(q.id)).attempts.length > 0, 15000, 'an attempt');
  await c.updateSubscription(q.id, { paused: true });
  const [a] = (await c.listSubscriptionAttempts(q.id)).attempts;
  assert.equal(a?.statusCode, 401);
  assert.equal(a?.outcome, 'failed');
  assert.equal(handled, 0);
  const counts = (await c.getQueue(q.id)).counts;
  assert.equal(counts.visible + counts.inFlight, 1, 'the message is kept');
});

test('after rotate-secret, a receiver holding only the new or only the previous secret verifies', async () => {
  const c = srv.client;
  for (const keep of ['new', 'previous'] as const) {
    let handled = 0;
    const { q, sub, setSecrets } = await pushedQueue('fetch', () => void handled++);
    const rotated = await c.rotateSubscriptionSecret(q.id);
    setSecrets([keep === 'new' ? rotated.signingSecret : sub.signingSecret]);
    await c.send(q.id, 'after rotation');
    await c.updateSubscription(q.id, { paused: false });
    await until(async () => (await c.getQueue(q.id)).counts.visible + (await c.getQueue(q.id)).counts.inFlight === 0, 15000, `ack with the ${keep} secret`);
    assert.equal(handled, 1);
  }
});

test('the Node handler takes a body read before it (express.raw) and refuses one already parsed', async () => {
  const s = secret();
  const body = JSON.stringify({ subscription: 'qsb_x', queue: { id: 'q', name: 'q' }, messages: [] });
  let mode: 'raw' | 'parsed' = 'raw';
  const handler = createNodePushHandler({ secrets: s, handler: () => undefined });
  const url = await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const r = req as IncomingMessage & { body?: unknown };
    r.body = mode === 'raw' ? Buffer.concat(chunks) : JSON.parse(Buffer.concat(chunks).toString());
    await handler(r, res);
  });
  const post = () => fetch(url, { method: 'POST', headers: signed(s, body), body });
  const ok = await post();
  assert.equal(ok.status, 200);
  assert.deepEqual(await ok.json(), { results: [] });
  mode = 'parsed';
  const parsed = await post();
  assert.equal(parsed.status, 500);
  assert.match(((await parsed.json()) as { error: { message: string } }).error.message, /raw body/);
});
