// docs/receiving-pushes.md's Express receiver, run as written: the snippet is taken from the
// guide, given a `seen`/`work` pair that records the messages, and run by Node as a module of
// this package (so `@queueshq/queues` is this package, built, and `express` the pinned
// devDependency). A real subscription of `queues serve` pushes to it, signed by the pusher: every
// message must be worked once and end acknowledged; a forged push must be refused with 401; a
// receiver started without a secret must not start.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { sign } from '../src/node.js';
import { freePort, pkgRoot, qname, startServer, until, type Server } from './server.js';

const guide = join(pkgRoot, '..', '..', 'docs', 'receiving-pushes.md');

// What the guide leaves to the reader: its deduplication store and its work. Each worked
// message is printed, so the test sees what the receiver did.
const record = `
const _seen = new Set();
async function seen(id) { return _seen.has(id); }
async function work(m) { _seen.add(m.messageId); console.log('WORK ' + m.messageId); }
`;

/** The first ts block under the Express heading, listening on $PORT and saying so. */
async function expressSnippet(): Promise<string> {
  const text = await readFile(guide, 'utf8');
  const start = text.indexOf('## Node, Express');
  assert.ok(start >= 0, 'docs/receiving-pushes.md has no "## Node, Express" section');
  const m = /```ts\n([\s\S]*?)```/.exec(text.slice(start));
  assert.ok(m, 'no ts block under "## Node, Express"');
  const listen = 'app.listen(3000);';
  assert.ok(m[1]!.includes(listen), `the snippet no longer ends with ${listen}`);
  return m[1]!.replace(listen, "app.listen(Number(process.env.PORT), () => console.log('LISTENING'));") + record;
}

interface Receiver {
  child: ChildProcess;
  worked: string[];
  /** Resolves when it listens; rejects with its stderr when it exits first. */
  ready: Promise<void>;
  /** Resolves with its exit code. */
  exited: Promise<number | null>;
}

async function run(env: Record<string, string | undefined>): Promise<Receiver> {
  const dir = join(pkgRoot, 'build-test', 'snippets');
  await mkdir(dir, { recursive: true });
  const file = join(dir, 'express.mjs');
  await writeFile(file, await expressSnippet());
  const child = spawn(process.execPath, [file], { cwd: pkgRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const worked: string[] = [];
  const ready = new Promise<void>((resolve, reject) => {
    void exited.then((code) => reject(new Error(`the Express snippet exited (${code}): ${stderr}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'LISTENING') resolve();
      else if (line.startsWith('WORK ')) worked.push(line.slice(5));
    });
  });
  return { child, worked, ready, exited };
}

let srv: Server;
before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv?.close();
});

test("docs/receiving-pushes.md's Express receiver verifies the pusher's pushes, works each message once and acknowledges it", async () => {
  const c = srv.client;
  const port = await freePort();
  const q = await c.createQueue({ name: qname('express') });
  const sub = await c.createSubscription(q.id, { endpoint: `http://127.0.0.1:${port}/queues`, paused: true });
  const r = await run({ PORT: String(port), QUEUES_SIGNING_SECRET: sub.signingSecret, QUEUES_PREVIOUS_SECRET: undefined, QUEUES_URL: srv.url });
  try {
    await r.ready;
    const sent = await c.sendMessages(q.id, [{ body: 'one' }, { body: 'two' }, { body: 'three' }]);
    const ids = sent.messages.map((m) => m.messageId).sort();
    await c.updateSubscription(q.id, { paused: false });
    await until(async () => {
      const n = (await c.getQueue(q.id)).counts;
      return n.visible + n.inFlight + n.delayed === 0;
    }, 20000, 'the pushed messages to be acknowledged');
    assert.deepEqual([...r.worked].sort(), ids);

    // A push not signed with the subscription's secret is refused, and nothing is worked.
    const body = JSON.stringify({ subscription: sub.slug, queue: { id: q.id, name: q.name }, messages: [] });
    const ts = Math.floor(Date.now() / 1000);
    const forged = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const res = await fetch(`http://127.0.0.1:${port}/queues`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': 'msg_forged', 'webhook-timestamp': String(ts), 'webhook-signature': sign(forged, 'msg_forged', ts, body) },
      body,
    });
    assert.equal(res.status, 401);
    assert.equal(r.worked.length, ids.length);
  } finally {
    r.child.kill('SIGTERM');
    await r.exited;
  }
});

test("docs/receiving-pushes.md's Express receiver does not start without a secret", async () => {
  const r = await run({ PORT: String(await freePort()), QUEUES_SIGNING_SECRET: undefined });
  await assert.rejects(r.ready, /exited \(1\):[\s\S]*WebhookVerificationError: queues push: a signing secret is not whsec_<base64>/);
  assert.notEqual(await r.exited, 0);
});
