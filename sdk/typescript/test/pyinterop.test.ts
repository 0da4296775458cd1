// The TypeScript SDK and the Python SDK (sdk/python, standard library only) on one server:
// messages sent by either are received and settled by the other, and a signature made by one
// verifies with the other. The Python side runs as `python3 -` with sdk/python on its path.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { deadLetter, sign, verify, type ReceivedMessage } from '../src/node.js';
import { qname, startServer, type Server } from './server.js';

const run = promisify(execFile);
// build-test/test/ → the repository's sdk/python.
const pythonSDK = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'python');
let srv: Server;
before(async () => {
  srv = await startServer();
});
after(() => srv?.close());

async function py(script: string, args: string[] = []): Promise<string> {
  const p = run('python3', ['-', ...args], {
    env: { ...process.env, PYTHONPATH: pythonSDK, QUEUES_URL: srv.url, QUEUES_TOKEN: srv.token },
    timeout: 60000,
  });
  p.child.stdin!.end(script);
  return (await p).stdout;
}

// Receives n messages with the Python consumer: each "dead:" body is dead-lettered with
// reason "py", the rest acknowledged; prints what it saw as JSON.
const pyConsume = `
import json, sys, threading
from queues import Client, Consumer, DeadLetter
queue, n = sys.argv[1], int(sys.argv[2])
seen, done = [], threading.Event()
def handler(m):
    seen.append({"messageId": m.message_id, "body": m.body, "attributes": dict(m.attributes)})
    if len(seen) == n:
        done.set()
    if m.body.startswith("dead:"):
        return DeadLetter("py")
c = Consumer(Client.from_env(), queue, handler, concurrency=2)
t = threading.Thread(target=c.run, daemon=True)
t.start()
if not done.wait(30):
    sys.exit("python did not get %d messages" % n)
c.stop.set()
t.join(30)
print(json.dumps(seen))
`;

test('sent by TypeScript, received and settled by Python', async () => {
  const c = srv.client;
  const dlq = await c.createQueue({ name: qname('pi-dlq') });
  const q = qname('ts-to-py');
  await c.createQueue({ name: q, redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 5 } });
  const sent = await c.sendMessages(q, [
    { body: 'héllo from ts', attributes: { from: 'ts' } },
    { body: 'dead:2' },
  ]);
  const got = JSON.parse(await py(pyConsume, [q, '2'])) as { messageId: string; body: string; attributes: Record<string, string> }[];
  assert.deepEqual(got.map((m) => m.messageId).sort(), sent.messages.map((m) => m.messageId).sort());
  assert.deepEqual(got.find((m) => m.body === 'héllo from ts')?.attributes, { from: 'ts' });
  const counts = (await c.getQueue(q)).counts;
  assert.equal(counts.visible + counts.inFlight, 0, 'Python acked or dead-lettered each one');
  const [d] = (await c.browseMessages(dlq.id)).messages;
  assert.equal(d?.body, 'dead:2');
  assert.equal(d?.deadLetter?.reason, 'py');
});

test('sent by Python, received and settled by TypeScript', async () => {
  const c = srv.client;
  const dlq = await c.createQueue({ name: qname('pi-dlq') });
  const q = qname('py-to-ts');
  await c.createQueue({ name: q, redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 5 } });
  const ids = JSON.parse(
    await py(
      `
import json, sys
from queues import Client
r = Client.from_env().send_batch(sys.argv[1], [{"body": "one from py", "attributes": {"from": "py"}},
                                               {"body": "dead:two", "attributes": {"from": "py"}}])
assert not r.failed, r.failed
print(json.dumps([m.message_id for m in r.messages]))
`,
      [q],
    ),
  ) as string[];
  assert.equal(ids.length, 2);
  const seen: ReceivedMessage[] = [];
  const ac = new AbortController();
  await c.consume(
    q,
    (m) => {
      seen.push(m);
      if (seen.length === 2) ac.abort();
      if (m.body.startsWith('dead:')) return deadLetter('ts');
    },
    { waitSeconds: 1, signal: ac.signal },
  );
  assert.deepEqual(seen.map((m) => m.messageId).sort(), [...ids].sort());
  assert.ok(seen.every((m) => m.attributes.from === 'py'));
  const counts = (await c.getQueue(q)).counts;
  assert.equal(counts.visible + counts.inFlight, 0);
  assert.equal((await c.browseMessages(dlq.id)).messages[0]?.deadLetter?.reason, 'ts');
});

test('signatures made by either SDK verify with the other', async () => {
  const secret = `whsec_${Buffer.from('py-interop-secret-0123456789ab').toString('base64')}`;
  const body = '{"subscription":"qsb_x","messages":[]}';
  const ts = Math.floor(Date.now() / 1000);
  const tsSig = sign(secret, 'msg_py', ts, body);
  const out = await py(
    `
import sys
from queues import sign, verify
secret, ts, sig, body = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].encode()
verify(secret, {"webhook-id": "msg_py", "webhook-timestamp": str(ts), "webhook-signature": sig}, body)
print(sign(secret, "msg_py", ts, body))
`,
    [secret, String(ts), tsSig, body],
  );
  verify(secret, { 'webhook-id': 'msg_py', 'webhook-timestamp': String(ts), 'webhook-signature': out.trim() }, body);
  assert.throws(() =>
    verify(secret, { 'webhook-id': 'msg_py', 'webhook-timestamp': String(ts), 'webhook-signature': out.trim() }, body + 'x'),
  );
});
