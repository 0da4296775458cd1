// Run by edge.test.ts in a child `node --experimental-vm-modules`: loads the package's core
// (dist/esm/index.js and what it imports) as ES modules inside an edge runtime's context
// (@edge-runtime/vm: Vercel's Edge Runtime globals — fetch, crypto.subtle, Request — and no
// process, Buffer or require), refusing every import that is not a file of the package
// (node:crypto above all). There it verifies and signs pushes, answers one through
// createPushHandler, and sends, receives and acknowledges a message on the real server; when
// the config has them, it verifies a real v1a push and a real push token (pushauth.test.ts).
// Prints the results as JSON. Args: the dist/esm folder, then a JSON config.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import vm from 'node:vm';
import { EdgeVM } from '@edge-runtime/vm';

const [dist, config] = process.argv.slice(2) as [string, string];
const edge = new EdgeVM();
const context = edge.context as unknown as vm.Context & { __config: string; __result?: Promise<unknown> };
context.__config = config;
const modules = new Map<string, vm.SourceTextModule>();

function load(file: string, source = readFileSync(file, 'utf8')): vm.SourceTextModule {
  let m = modules.get(file);
  if (!m) {
    m = new vm.SourceTextModule(source, { context, identifier: file });
    modules.set(file, m);
  }
  return m;
}

const check = `
import * as q from './index.js';
globalThis.__result = (async () => {
  const c = JSON.parse(globalThis.__config);
  const out = { globals: [typeof process, typeof Buffer, typeof require].join(' ') };
  const headers = (sig) => ({ 'webhook-id': c.id, 'webhook-timestamp': String(c.ts), 'webhook-signature': sig });
  await q.verifyAsync(c.secret, headers(c.sig), c.body);
  out.verified = true;
  out.forged = await q.verifyAsync(c.secret, headers(c.sig), c.body + ' ').then(() => 'accepted', (e) => e.reason);
  out.signed = await q.signAsync(c.secret, c.id, c.ts, c.body);
  const push = q.createPushHandler({ secrets: [c.secret], handler: () => q.retryAfter(7) });
  const res = await push(new Request('http://edge.example/push', { method: 'POST', headers: headers(c.sig), body: c.body }));
  out.push = { status: res.status, body: await res.json() };
  const client = new q.QueuesClient({ url: c.url, token: c.token });
  await client.createQueue({ name: c.queue });
  await client.send(c.queue, 'from the edge');
  const [m] = await client.receive(c.queue, { waitSeconds: 5 });
  await client.ack(m.receiptHandle);
  out.received = m.body;
  out.notFound = await client.getQueue(c.queue + '-missing').then(() => 'found', (e) => e instanceof q.NotFoundError && e instanceof q.QueuesError);
  if (c.v1a) {
    // A push the real service signed with ed25519 (v1a), verified with the public key (WebCrypto Ed25519).
    const p = c.v1a;
    out.v1a = await q.verifyAsync(p.publicKey, p.headers, p.body).then(() => 'verified', (e) => e.reason);
    out.v1aForged = await q.verifyAsync(p.publicKey, p.headers, p.body + ' ').then(() => 'accepted', (e) => e.reason);
  }
  if (c.pushToken) {
    // A push token of the real service, checked against its real JWKS (fetch, WebCrypto RSASSA-PKCS1-v1_5).
    const t = c.pushToken;
    const verify = q.createTokenVerifier({ issuer: t.issuer, audience: t.audience, jwksUrl: t.jwksUrl });
    out.token = await verify('Bearer ' + t.jwt).then((claims) => claims.sub, (e) => e.reason);
    const wrong = q.createTokenVerifier({ issuer: t.issuer, audience: t.audience + '/other', jwksUrl: t.jwksUrl });
    out.tokenWrongAudience = await wrong('Bearer ' + t.jwt).then(() => 'accepted', (e) => e.reason);
  }
  return out;
})();
`;

const main = load(join(dist, '__edge_check__.js'), check);
await main.link(async (specifier, referrer) => {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) {
    throw new Error(`an edge runtime has no module "${specifier}" (imported by ${referrer.identifier})`);
  }
  return load(resolve(dirname(referrer.identifier), specifier));
});
await main.evaluate();
console.log(JSON.stringify(await context.__result));
