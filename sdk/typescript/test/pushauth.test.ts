// The asymmetric push signatures (v1a, ed25519) and push tokens (auth "oidc", RS256 JWT) as the
// real service makes them, checked by the SDK's verifiers — node:crypto (./node), WebCrypto
// (the core) and the core on an edge runtime — and by reference implementations: `jose`
// (jwtVerify with createRemoteJWKSet) for the token, and Node's own ed25519 verify for v1a.
// The Standard Webhooks reference library for JavaScript (`standardwebhooks` 1.3.0) verifies
// only v1 (HMAC) signatures, so it checks the service's and the SDK's v1 here.
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, randomBytes, verify as cryptoVerify } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server as HTTPServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { Webhook } from 'standardwebhooks';
import ts from 'typescript';
import { TokenVerificationError, WebhookVerificationError, createTokenVerifier, sign, verify as verifySync, verifyAsync } from '../src/node.js';
import type { PushBatch } from '../src/openapi.js';
import { edgeCheck, freePort, pkgRoot, qname, startServer, until, type Server } from './server.js';

// The audience of the test's subscriptions: the docs' example, so the guide's snippets run as written.
const AUDIENCE = 'https://example.com/queues';

/** A push as the receiver got it: headers (lower-case names) and the raw body. */
interface Captured {
  headers: Record<string, string>;
  body: string;
}

let srv: Server;
// The service's public URL (the tokens' iss) is its own, so the keys are at <issuer>/.well-known/jwks.json.
let issuer: string;
let jwksUrl: string;
const hooks: HTTPServer[] = [];

before(async () => {
  const port = await freePort();
  srv = await startServer({ QUEUES_LISTEN: `127.0.0.1:${port}`, QUEUES_PUBLIC_URL: `http://127.0.0.1:${port}` });
  issuer = srv.url;
  jwksUrl = `${srv.url}/.well-known/jwks.json`;
});
after(async () => {
  for (const h of hooks) h.close();
  await srv?.close();
});

// firstPush creates a queue with a subscription of the given settings pushing to a local
// receiver that records each push and acknowledges its messages, sends one message and
// returns the first push with the subscription.
async function firstPush(settings: { signing?: 'hmac' | 'ed25519'; auth?: { type: 'oidc'; audience?: string } }) {
  const got: Captured[] = [];
  const h = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    got.push({ headers, body });
    const batch = JSON.parse(body) as PushBatch;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ results: batch.messages.map((m) => ({ messageId: m.messageId, outcome: 'ack' })) }));
  });
  hooks.push(h);
  await new Promise<void>((r) => h.listen(0, '127.0.0.1', r));
  const c = srv.client;
  const q = await c.createQueue({ name: qname('pushauth') });
  const endpoint = `http://127.0.0.1:${(h.address() as AddressInfo).port}/hook`;
  const sub = await c.createSubscription(q.id, { endpoint, ...settings });
  await c.send(q.id, JSON.stringify({ hello: 'ü' }));
  await until(() => got.length > 0, 15000, 'a push');
  return { push: got[0]!, sub, queue: q };
}

async function reason(f: () => unknown): Promise<string> {
  try {
    await f();
  } catch (e) {
    if (e instanceof WebhookVerificationError || e instanceof TokenVerificationError) return e.reason;
    throw e;
  }
  return 'verified';
}

// An ed25519 public key from its 32 raw bytes through SPKI DER (RFC 8410's fixed prefix),
// not the JWK path the SDK takes, so the reference check shares no code with it.
function spkiKey(publicKey: string) {
  const raw = Buffer.from(publicKey.slice('whpk_'.length), 'base64');
  return createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]), format: 'der', type: 'spki' });
}

function otherPublicKey(): string {
  const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
  return `whpk_${Buffer.from(jwk.x!, 'base64url').toString('base64')}`;
}

describe('v1a: a push the service signed with ed25519', () => {
  let push: Captured;
  let publicKey: string;
  before(async () => {
    const r = await firstPush({ signing: 'ed25519' });
    push = r.push;
    publicKey = r.sub.signingPublicKey!;
  });

  test('carries only v1a signatures, which Node’s ed25519 verifies over id.timestamp.body', () => {
    assert.match(publicKey, /^whpk_[A-Za-z0-9+/]{43}=$/);
    const sigs = push.headers['webhook-signature']!.split(' ');
    assert.ok(sigs.length > 0 && sigs.every((s) => s.startsWith('v1a,')), push.headers['webhook-signature']);
    const content = Buffer.from(`${push.headers['webhook-id']}.${push.headers['webhook-timestamp']}.${push.body}`);
    const sig = Buffer.from(sigs[0]!.slice('v1a,'.length), 'base64');
    assert.equal(cryptoVerify(null, content, spkiKey(publicKey), sig), true);
    assert.equal(cryptoVerify(null, Buffer.concat([content, Buffer.from(' ')]), spkiKey(publicKey), sig), false);
  });

  for (const [name, verify] of [
    ['verifyAsync (WebCrypto, the core)', verifyAsync],
    ['verify (node:crypto, ./node)', verifySync],
  ] as const) {
    test(`${name} accepts it with the public key and refuses every forgery`, async () => {
      const { headers, body } = push;
      assert.equal(await reason(() => verify(publicKey, headers, body)), 'verified');
      assert.equal(await reason(() => verify([`whsec_${randomBytes(32).toString('base64')}`, publicKey], headers, Buffer.from(body))), 'verified', 'beside an HMAC secret');
      assert.equal(await reason(() => verify(publicKey, headers, body + ' ')), 'no_matching_signature', 'a changed body');
      assert.equal(await reason(() => verify(publicKey, { ...headers, 'webhook-id': 'msg_other' }, body)), 'no_matching_signature', 'a changed id');
      assert.equal(await reason(() => verify(otherPublicKey(), headers, body)), 'no_matching_signature', 'another key');
      const relabeled = headers['webhook-signature']!.replace(/v1a,/g, 'v1,');
      assert.equal(await reason(() => verify(publicKey, { ...headers, 'webhook-signature': relabeled }, body)), 'no_matching_signature', 'a v1a signature labeled v1');
      const hmacOnly = sign(`whsec_${randomBytes(32).toString('base64')}`, headers['webhook-id']!, Number(headers['webhook-timestamp']), body);
      assert.equal(await reason(() => verify(publicKey, { ...headers, 'webhook-signature': hmacOnly }, body)), 'no_matching_signature', 'only a v1 signature');
      assert.equal(await reason(() => verify(`whsec_${randomBytes(32).toString('base64')}`, headers, body)), 'no_matching_signature', 'an HMAC secret for a v1a push');
      assert.equal(await reason(() => verify('whpk_' + randomBytes(31).toString('base64'), headers, body)), 'bad_secret', 'a public key of 31 bytes');
      const late = () => (Number(headers['webhook-timestamp']) + 301) * 1000;
      assert.equal(await reason(() => verify(publicKey, headers, body, { now: late })), 'stale_timestamp');
    });
  }

  test('the core verifies it on an edge runtime (WebCrypto Ed25519, no node: modules)', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const ts = Math.floor(Date.now() / 1000);
    const body = '{"subscription":"qsb_edge","messages":[]}';
    const out = await edgeCheck({
      secret,
      id: 'msg_edge',
      ts,
      body,
      sig: sign(secret, 'msg_edge', ts, body),
      url: srv.url,
      token: srv.token,
      queue: qname('edge-v1a'),
      v1a: { publicKey, headers: push.headers, body: push.body },
    });
    assert.equal(out.v1a, 'verified');
    assert.equal(out.v1aForged, 'no_matching_signature');
  });
});

describe('v1: the Standard Webhooks reference library (standardwebhooks 1.3.0)', () => {
  test('verifies a push the service signed with its HMAC secret, and refuses it changed', async () => {
    const { push, sub } = await firstPush({});
    const wh = new Webhook(sub.signingSecret);
    assert.ok(wh.verify(push.body, push.headers));
    assert.throws(() => wh.verify(push.body + ' ', push.headers), /signature/i);
    assert.throws(() => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(push.body, push.headers), /signature/i);
  });

  test('the SDK signs as it does and verifies what it signs', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const wh = new Webhook(secret);
    const ts = Math.floor(Date.now() / 1000);
    const body = '{"messages":[{"body":"ü€"}]}';
    assert.equal(wh.sign('msg_ref', new Date(ts * 1000), body), sign(secret, 'msg_ref', ts, body));
    const headers = { 'webhook-id': 'msg_ref', 'webhook-timestamp': String(ts), 'webhook-signature': wh.sign('msg_ref', new Date(ts * 1000), body) };
    assert.equal(await reason(() => verifyAsync(secret, headers, body)), 'verified');
    assert.equal(await reason(() => verifySync(secret, headers, body)), 'verified');
    assert.ok(wh.verify(body, { ...headers, 'webhook-signature': sign(secret, 'msg_ref', ts, body) }));
  });
});

// b64url re-encodes a JWT segment from a JSON value.
const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const part = (jwt: string, i: number) => JSON.parse(Buffer.from(jwt.split('.')[i]!, 'base64url').toString()) as Record<string, unknown>;

describe('push token: auth {type: "oidc"}', () => {
  let jwt: string;
  let queueName: string;
  before(async () => {
    const r = await firstPush({ auth: { type: 'oidc', audience: AUDIENCE } });
    const authz = r.push.headers.authorization ?? '';
    assert.match(authz, /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    jwt = authz.slice('Bearer '.length);
    queueName = r.queue.name;
    assert.deepEqual(r.sub.auth, { type: 'oidc', audience: AUDIENCE });
  });

  // The same token changed one way, for both verifiers to refuse.
  const forged = () => {
    const [h, p, s] = jwt.split('.') as [string, string, string];
    return {
      tampered: `${h}.${b64url({ ...part(jwt, 1), sub: 'someone/else' })}.${s}`,
      unknownKid: `${b64url({ ...part(jwt, 0), kid: 'no-such-key' })}.${p}.${s}`,
      algNone: `${b64url({ alg: 'none', typ: 'JWT' })}.${p}.`,
      hs256: `${b64url({ ...part(jwt, 0), alg: 'HS256' })}.${p}.${s}`,
      truncated: `${h}.${p}`,
    };
  };

  test('createTokenVerifier accepts the real token against the real JWKS, fetched once for many', async () => {
    let fetches = 0;
    const counting: typeof fetch = (input, init) => (fetches++, fetch(input, init));
    const verify = createTokenVerifier({ issuer, audience: AUDIENCE, jwksUrl, fetch: counting });
    const claims = await verify(`Bearer ${jwt}`);
    assert.equal(claims.iss, issuer);
    assert.equal(claims.aud, AUDIENCE);
    assert.match(claims.sub, new RegExp(`/${queueName}$`));
    assert.equal(claims.exp - claims.iat, 300, 'a five-minute token');
    assert.deepEqual(await verify(jwt), claims, 'the bare token');
    assert.equal(fetches, 1, 'the key set is cached by kid');
  });

  test('jose (jwtVerify, createRemoteJWKSet) accepts the real token against the real JWKS', async () => {
    const { payload, protectedHeader } = await jwtVerify(jwt, createRemoteJWKSet(new URL(jwksUrl)), { issuer, audience: AUDIENCE, algorithms: ['RS256'] });
    assert.equal(protectedHeader.alg, 'RS256');
    const jwks = (await (await fetch(jwksUrl)).json()) as { keys: { kid: string }[] };
    assert.ok(jwks.keys.some((k) => k.kid === decodeProtectedHeader(jwt).kid));
    assert.equal(payload.sub, part(jwt, 1).sub);
  });

  test('both refuse a wrong audience, a wrong issuer and an expired token', async () => {
    const exp = part(jwt, 1).exp as number;
    const cases: [string, { issuer: string; audience: string; nowSeconds?: number }][] = [
      ['wrong audience', { issuer, audience: `${AUDIENCE}/other` }],
      ['wrong issuer', { issuer: 'https://evil.test', audience: AUDIENCE }],
      ['expired', { issuer, audience: AUDIENCE, nowSeconds: exp + 1 }],
    ];
    for (const [name, c] of cases) {
      const now = c.nowSeconds === undefined ? undefined : () => c.nowSeconds! * 1000;
      const verify = createTokenVerifier({ issuer: c.issuer, audience: c.audience, jwksUrl, now });
      assert.equal(await reason(() => verify(jwt)), 'bad_claims', name);
      const opts = { issuer: c.issuer, audience: c.audience, algorithms: ['RS256'], currentDate: c.nowSeconds === undefined ? undefined : new Date(c.nowSeconds * 1000) };
      await assert.rejects(jwtVerify(jwt, createRemoteJWKSet(new URL(jwksUrl)), opts), /JWTClaimValidationFailed|JWTExpired|claim/i, `jose: ${name}`);
    }
    const justInTime = createTokenVerifier({ issuer, audience: AUDIENCE, jwksUrl, now: () => exp * 1000 });
    assert.equal(await reason(() => justInTime(jwt)), 'verified', 'valid until exp');
  });

  test('both refuse an unknown kid, a tampered payload, alg none or HS256, and a malformed token', async () => {
    const f = forged();
    const want: Record<keyof typeof f, string> = { tampered: 'bad_token', unknownKid: 'unknown_key', algNone: 'bad_token', hs256: 'bad_token', truncated: 'bad_token' };
    const verify = createTokenVerifier({ issuer, audience: AUDIENCE, jwksUrl });
    const jwks = createRemoteJWKSet(new URL(jwksUrl));
    for (const [name, token] of Object.entries(f) as [keyof typeof f, string][]) {
      assert.equal(await reason(() => verify(token)), want[name], name);
      await assert.rejects(jwtVerify(token, jwks, { issuer, audience: AUDIENCE, algorithms: ['RS256'] }), Error, `jose: ${name}`);
    }
    assert.equal(await reason(() => verify(undefined)), 'no_token');
    assert.equal(await reason(() => verify('')), 'no_token');
    assert.equal(await reason(() => verify(jwt)), 'verified', 'the real token still verifies');
  });

  test('an unreachable key set is jwks_unavailable, not a verified token', async () => {
    const verify = createTokenVerifier({ issuer, audience: AUDIENCE, jwksUrl: `${srv.url}/no-such-jwks.json` });
    assert.equal(await reason(() => verify(jwt)), 'jwks_unavailable');
  });

  test('the core’s verifier accepts it on an edge runtime (fetch and WebCrypto only)', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const ts = Math.floor(Date.now() / 1000);
    const body = '{"subscription":"qsb_edge","messages":[]}';
    const out = await edgeCheck({
      secret,
      id: 'msg_edge',
      ts,
      body,
      sig: sign(secret, 'msg_edge', ts, body),
      url: srv.url,
      token: srv.token,
      queue: qname('edge-jwt'),
      pushToken: { jwt, issuer: issuer, audience: AUDIENCE, jwksUrl },
    });
    assert.match(String(out.token), new RegExp(`/${queueName}$`));
    assert.equal(out.tokenWrongAudience, 'bad_claims');
  });
});

// docs/receiving-pushes.md's TypeScript receivers of the v1a and token sections, run as
// written: each block is transpiled (its types stripped), given what the guide leaves to the
// reader (`work`; the token block also the block before's `publicKey`), written inside the
// package so `@queueshq/queues` is this package, built, and its POST handed a real push.
type Route = { POST(req: Request): Promise<Response> };
const worked: string[] = [];
(globalThis as { __guideWorked?: string[] }).__guideWorked = worked;

async function guideRoute(heading: string, file: string, prelude: string, env: Record<string, string>): Promise<Route> {
  const text = await readFile(join(pkgRoot, '..', '..', 'docs', 'receiving-pushes.md'), 'utf8');
  const start = text.indexOf(heading);
  assert.ok(start >= 0, `docs/receiving-pushes.md has no "${heading}"`);
  const block = /```ts\n([\s\S]*?)```/.exec(text.slice(start));
  assert.ok(block, `no ts block under "${heading}"`);
  const js = ts.transpileModule(block[1]!, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const dir = join(pkgRoot, 'build-test', 'snippets');
  await mkdir(dir, { recursive: true });
  const path = join(dir, file);
  // Import declarations are hoisted, so the prelude may come first.
  await writeFile(path, `const work = async (m) => { globalThis.__guideWorked.push(m.body); };\n${prelude}\n${js}`);
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return (await import(`${pathToFileURL(path).href}?${Date.now()}`)) as Route;
  } finally {
    process.env = saved;
  }
}

test("docs/receiving-pushes.md's v1a and token receivers accept a real push and refuse a forged one", async () => {
  const { push, sub } = await firstPush({ signing: 'ed25519', auth: { type: 'oidc', audience: AUDIENCE } });
  const env = { QUEUES_SIGNING_PUBLIC_KEY: sub.signingPublicKey!, QUEUES_PUBLIC_URL: issuer };
  const req = (headers: Record<string, string>, body = push.body) => new Request('http://127.0.0.1/queues', { method: 'POST', headers, body });
  const v1a = await guideRoute('## Asymmetric signatures', 'v1a.mjs', '', env);
  assert.equal((await v1a.POST(req(push.headers))).status, 200);
  assert.equal((await v1a.POST(req(push.headers, `${push.body} `))).status, 401);
  const token = await guideRoute('## Token auth', 'token.mjs', 'const publicKey = process.env.QUEUES_SIGNING_PUBLIC_KEY;', env);
  assert.equal((await token.POST(req(push.headers))).status, 200);
  const { authorization, ...noToken } = push.headers;
  assert.equal((await token.POST(req(noToken))).status, 401);
  assert.equal((await token.POST(req({ ...noToken, authorization: `${authorization}x` }))).status, 401);
  assert.equal((await token.POST(req(push.headers, `${push.body} `))).status, 401, 'the signature is still checked');
  assert.deepEqual(worked, [JSON.parse(push.body).messages[0].body, JSON.parse(push.body).messages[0].body]);
  await assert.rejects(guideRoute('## Asymmetric signatures', 'v1a-bad.mjs', '', { ...env, QUEUES_SIGNING_PUBLIC_KEY: 'whsec_notakey' }), /QUEUES_SIGNING_PUBLIC_KEY/);
});
