// The TypeScript SDK and the Go SDK (sdk/go/client) on one server: messages sent by either are
// received and settled by the other, and signatures made by one verify with the other. (A
// push signed by the server and verified by this SDK is in push.test.ts.) The Go side is
// test/gointerop, built by scripts/build-server.mjs.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { deadLetter, sign, verify, type ReceivedMessage } from '../src/node.js';
import { binDir, qname, startServer, type Server } from './server.js';

const run = promisify(execFile);
let srv: Server;
before(async () => {
  srv = await startServer();
});
after(() => srv?.close());

async function go(args: string[], input?: string): Promise<string> {
  const p = run(join(binDir, 'gointerop'), args, {
    env: { ...process.env, QUEUES_URL: srv.url, QUEUES_TOKEN: srv.token },
    timeout: 60000,
  });
  if (input !== undefined) {
    p.child.stdin!.end(input);
  }
  return (await p).stdout;
}

test('sent by TypeScript, received and settled by Go', async () => {
  const c = srv.client;
  const dlq = await c.createQueue({ name: qname('i-dlq') });
  const q = qname('ts-to-go');
  await c.createQueue({ name: q, redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 5 } });
  const sent = await c.sendMessages(q, [
    { body: 'héllo from ts', attributes: { from: 'ts' } },
    { body: '{"n":2}' },
    { body: 'dead:3' },
  ]);
  const got = JSON.parse(await go(['consume', q, '3'])) as { messageId: string; body: string; attributes: Record<string, string> }[];
  assert.deepEqual(got.map((m) => m.messageId).sort(), sent.messages.map((m) => m.messageId).sort());
  assert.deepEqual(got.find((m) => m.body === 'héllo from ts')?.attributes, { from: 'ts' });
  const counts = (await c.getQueue(q)).counts;
  assert.equal(counts.visible + counts.inFlight, 0, 'Go acked or dead-lettered each one');
  const [d] = (await c.browseMessages(dlq.id)).messages;
  assert.equal(d?.body, 'dead:3');
  assert.equal(d?.deadLetter?.reason, 'go');
});

test('sent by Go, received and settled by TypeScript', async () => {
  const c = srv.client;
  const dlq = await c.createQueue({ name: qname('i-dlq') });
  const q = qname('go-to-ts');
  await c.createQueue({ name: q, redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 5 } });
  const ids = JSON.parse(await go(['send', q, 'one from go', 'two from go', 'dead:three'])) as string[];
  assert.equal(ids.length, 3);
  const seen: ReceivedMessage[] = [];
  const ac = new AbortController();
  await c.consume(
    q,
    (m) => {
      seen.push(m);
      if (seen.length === 3) ac.abort();
      if (m.body.startsWith('dead:')) return deadLetter('ts');
    },
    { waitSeconds: 1, signal: ac.signal },
  );
  assert.deepEqual(seen.map((m) => m.messageId).sort(), [...ids].sort());
  assert.ok(seen.every((m) => m.attributes.from === 'go'));
  const counts = (await c.getQueue(q)).counts;
  assert.equal(counts.visible + counts.inFlight, 0);
  assert.equal((await c.browseMessages(dlq.id)).messages[0]?.deadLetter?.reason, 'ts');
});

test('a signature made by this SDK verifies with the Go SDK, and not once changed', async () => {
  const secret = `whsec_${Buffer.from('interop-secret-0123456789abcdef').toString('base64')}`;
  const body = '{"subscription":"qsb_x","messages":[]}';
  const ts = Math.floor(Date.now() / 1000);
  const sig = sign(secret, 'msg_interop', ts, body);
  await go(['verify', secret, 'msg_interop', String(ts), sig], body);
  await assert.rejects(go(['verify', secret, 'msg_interop', String(ts), sig], body + 'x'));
  // And this SDK verifies the same headers.
  verify(secret, { 'webhook-id': 'msg_interop', 'webhook-timestamp': String(ts), 'webhook-signature': sig }, body);
});
