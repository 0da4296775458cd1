// docs/receiving-pushes.md's Express receiver and Next.js route handler, run as written: each
// snippet is taken from the guide, given a `seen`/`work` pair that records the messages, and run
// by Node as a module of this package (so `@queueshq/queues` is this package, built, and
// `express` the pinned devDependency). The route handler's types are stripped by TypeScript and
// it is served by node:http the way Next.js calls it (a Request in, a Response out); Next's
// `after` — which runs a callback once the response is sent — is the one line replaced, by a
// shim doing the same, as it works only inside Next's own server. A real subscription of
// `queues serve` pushes to each, signed by the pusher: every message must be worked once and end
// acknowledged; a forged push must be refused with 401; a receiver started without a secret
// must not start.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import ts from 'typescript';
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

const nextAfter = "import { after } from 'next/server';";

/** The first ts block under the Next.js heading, types stripped, served on $PORT by node:http. */
async function nextSnippet(): Promise<string> {
  const text = await readFile(guide, 'utf8');
  const start = text.indexOf('## Next.js route handler');
  assert.ok(start >= 0, 'docs/receiving-pushes.md has no "## Next.js route handler" section');
  const m = /```ts\n([\s\S]*?)```/.exec(text.slice(start));
  assert.ok(m, 'no ts block under "## Next.js route handler"');
  assert.ok(m[1]!.includes(nextAfter), `the snippet no longer imports Next's after: ${nextAfter}`);
  const src = m[1]!.replace(nextAfter, 'const after = (f) => { setImmediate(() => { Promise.resolve().then(f).catch((e) => console.error(e)); }); };');
  const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  return js + record + `
import { createServer } from 'node:http';
createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const request = new Request('http://127.0.0.1' + req.url, { method: req.method, headers: req.headers, body: Buffer.concat(chunks) });
  const response = await POST(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}).listen(Number(process.env.PORT), () => console.log('LISTENING'));
`;
}

interface Receiver {
  child: ChildProcess;
  worked: string[];
  /** Resolves when it listens; rejects with its stderr when it exits first. */
  ready: Promise<void>;
  /** Resolves with its exit code. */
  exited: Promise<number | null>;
}

type Snippet = 'express' | 'next';

async function run(env: Record<string, string | undefined>, which: Snippet = 'express'): Promise<Receiver> {
  const dir = join(pkgRoot, 'build-test', 'snippets');
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${which}.mjs`);
  await writeFile(file, which === 'express' ? await expressSnippet() : await nextSnippet());
  const child = spawn(process.execPath, [file], { cwd: pkgRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const worked: string[] = [];
  const ready = new Promise<void>((resolve, reject) => {
    void exited.then((code) => reject(new Error(`the ${which} snippet exited (${code}): ${stderr}`)));
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

for (const which of ['express', 'next'] as const) {
  test(`docs/receiving-pushes.md's ${which} receiver verifies the pusher's pushes, works each message once and acknowledges it`, async () => {
    const c = srv.client;
    const port = await freePort();
    const q = await c.createQueue({ name: qname(which) });
    const sub = await c.createSubscription(q.id, { endpoint: `http://127.0.0.1:${port}/queues`, paused: true });
    const r = await run({ PORT: String(port), QUEUES_SIGNING_SECRET: sub.signingSecret, QUEUES_PREVIOUS_SECRET: undefined, QUEUES_URL: srv.url }, which);
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

  test(`docs/receiving-pushes.md's ${which} receiver does not start without a secret`, async () => {
    const r = await run({ PORT: String(await freePort()), QUEUES_SIGNING_SECRET: undefined }, which);
    await assert.rejects(r.ready, /exited \(1\):[\s\S]*WebhookVerificationError: queues push: a signing secret is not whsec_<base64>/);
    assert.notEqual(await r.exited, 0);
  });
}
