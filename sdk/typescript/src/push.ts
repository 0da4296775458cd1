// The receiving end of push subscriptions: Standard Webhooks signature verification on
// WebCrypto (crypto.subtle, so it runs on edge runtimes and in browsers as well as Node) and
// the handler for fetch-style runtimes, which answers each pushed message's outcome. What
// needs Node (a synchronous verify on node:crypto, the handler for node:http and Express) is
// in node.ts, the package's `./node` entry.
import type { PushBatch, PushedMessage, PushResults } from './openapi.js';
import { outcomeOf, type HandlerResult } from './outcome.js';
import { withProcessSpan } from './tracing.js';

/** The Standard Webhooks headers of a push. */
export const WEBHOOK_ID = 'webhook-id';
export const WEBHOOK_TIMESTAMP = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE = 'webhook-signature';
/** How far (seconds) a push's timestamp may be from the receiver's clock by default. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Why a push did not verify. */
export type VerifyFailure = 'missing_headers' | 'bad_timestamp' | 'stale_timestamp' | 'no_matching_signature' | 'bad_secret';

/** A push whose signature does not verify (a receiver answers it 401). */
export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: VerifyFailure,
    message: string,
  ) {
    super(`queues push: ${message}`);
    this.name = 'WebhookVerificationError';
  }
}

/** Headers as fetch's Headers, or Node's IncomingHttpHeaders (lowercase names). */
export type HeadersLike = Headers | { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export type RawBody = string | Uint8Array | ArrayBuffer;

export interface VerifyOptions {
  /** How far the timestamp may be from now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The clock, in milliseconds since the epoch (default Date.now). */
  now?: () => number;
}

function header(h: HeadersLike, name: string): string {
  if (typeof (h as { get?: unknown }).get === 'function') {
    return (h as { get(name: string): string | null }).get(name) ?? '';
  }
  const rec = h as Record<string, string | string[] | undefined>;
  const v = rec[name] ?? rec[Object.keys(rec).find((k) => k.toLowerCase() === name) ?? ''];
  return Array.isArray(v) ? v.join(' ') : (v ?? '');
}

/** @internal The bytes of a body given as a string (UTF-8), bytes or an ArrayBuffer. */
export function bytes(b: RawBody): Uint8Array {
  if (typeof b === 'string') return new TextEncoder().encode(b);
  return b instanceof Uint8Array ? b : new Uint8Array(b);
}

/** @internal Base64 to bytes; undefined when it is not base64. */
export function fromBase64(s: string): Uint8Array | undefined {
  try {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return undefined;
  }
}

function toBase64(b: Uint8Array): string {
  let bin = '';
  for (const x of b) bin += String.fromCharCode(x);
  return btoa(bin);
}

/** @internal The HMAC key bytes of a `whsec_<base64>` secret; throws bad_secret for anything else (an empty key above all). */
export function secretBytes(secret: string): Uint8Array {
  const b64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : '';
  const key = /^[A-Za-z0-9+/]+={0,2}$/.test(b64) ? fromBase64(b64) : undefined;
  if (!key || key.length === 0) throw new WebhookVerificationError('bad_secret', 'a signing secret is not whsec_<base64>');
  return key;
}

/** @internal What verification needs of a push: its id, timestamp and the v1 (HMAC) and v1a (ed25519) signatures, checked for presence and freshness. */
export function pushSignatures(headers: HeadersLike, opts: VerifyOptions): { id: string; ts: string; given: Uint8Array[]; givenA: Uint8Array[] } {
  const id = header(headers, WEBHOOK_ID);
  const ts = header(headers, WEBHOOK_TIMESTAMP);
  const sigs = header(headers, WEBHOOK_SIGNATURE);
  if (!id || !ts || !sigs) {
    throw new WebhookVerificationError('missing_headers', 'missing webhook-id, webhook-timestamp or webhook-signature');
  }
  if (!/^\d{1,15}$/.test(ts)) throw new WebhookVerificationError('bad_timestamp', 'webhook-timestamp is not unix seconds');
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = (opts.now ?? Date.now)() / 1000;
  if (Math.abs(now - Number(ts)) > tolerance) {
    throw new WebhookVerificationError('stale_timestamp', 'webhook-timestamp is outside the tolerance');
  }
  const given: Uint8Array[] = [];
  const givenA: Uint8Array[] = [];
  for (const s of sigs.split(/\s+/)) {
    const comma = s.indexOf(',');
    const v = comma < 0 ? '' : s.slice(0, comma);
    if (v !== 'v1' && v !== 'v1a') continue;
    const sig = fromBase64(s.slice(comma + 1));
    if (sig) (v === 'v1' ? given : givenA).push(sig);
  }
  return { id, ts, given, givenA };
}

/** @internal The secrets to try: one, or the list with unset entries (an absent previous secret) left out. */
export function secretList(secrets: string | readonly (string | undefined | null)[]): string[] {
  return (typeof secrets === 'string' ? [secrets] : secrets).filter((s): s is string => !!s);
}

/** @internal Whether a equals b, in time that depends on the lengths only (public: an HMAC-SHA256 is 32 bytes). */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

function subtle(): SubtleCrypto {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (!c?.subtle) throw new Error('queues push: this runtime has no WebCrypto (crypto.subtle); on Node use verify from @queueshq/queues/node');
  return c.subtle;
}

async function macAsync(secret: string, id: string, ts: string, body: Uint8Array): Promise<Uint8Array> {
  const key = await subtle().importKey('raw', secretBytes(secret) as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const prefix = new TextEncoder().encode(`${id}.${ts}.`);
  const data = new Uint8Array(prefix.length + body.length);
  data.set(prefix);
  data.set(body, prefix.length);
  return new Uint8Array(await subtle().sign('HMAC', key, data));
}

/**
 * The `webhook-signature` value (`v1,<base64>`) of a push signed with secret, as the pusher
 * makes it; for testing a receiver. WebCrypto, so asynchronous (`sign` of
 * `@queueshq/queues/node` is the synchronous one).
 */
export async function signAsync(secret: string, id: string, timestampSeconds: number, rawBody: RawBody): Promise<string> {
  return `v1,${toBase64(await macAsync(secret, id, String(Math.floor(timestampSeconds)), bytes(rawBody)))}`;
}

/** The prefix of a subscription's ed25519 public key (`signingPublicKey`): `whpk_` + base64 of 32 bytes. */
export const PUBLIC_KEY_PREFIX = 'whpk_';

/** @internal The 32 bytes of a `whpk_<base64>` public key; throws bad_secret for anything else. */
export function publicKeyBytes(key: string): Uint8Array {
  const b64 = key.slice(PUBLIC_KEY_PREFIX.length);
  const raw = /^[A-Za-z0-9+/]+={0,2}$/.test(b64) ? fromBase64(b64) : undefined;
  if (!raw || raw.length !== 32) throw new WebhookVerificationError('bad_secret', 'a public key is not whpk_<base64 of 32 bytes>');
  return raw;
}

/** @internal `id.timestamp.body`, what both schemes sign. */
export function signedContent(id: string, ts: string, body: Uint8Array): Uint8Array {
  const prefix = new TextEncoder().encode(`${id}.${ts}.`);
  const data = new Uint8Array(prefix.length + body.length);
  data.set(prefix);
  data.set(body, prefix.length);
  return data;
}

async function verifyV1aAsync(publicKey: string, id: string, ts: string, body: Uint8Array, given: Uint8Array[]): Promise<boolean> {
  const key = await subtle().importKey('raw', publicKeyBytes(publicKey) as Uint8Array<ArrayBuffer>, { name: 'Ed25519' }, false, ['verify']);
  const data = signedContent(id, ts, body) as Uint8Array<ArrayBuffer>;
  for (const sig of given) {
    if (await subtle().verify({ name: 'Ed25519' }, key, sig as Uint8Array<ArrayBuffer>, data)) return true;
  }
  return false;
}

/**
 * Checks a push's Standard Webhooks signature: the three headers are present, the timestamp
 * is within the tolerance of now, and one of the space-separated `v1,…` signatures is the
 * HMAC-SHA256 of `id.timestamp.body` under one of the secrets (the current one and, for 24 h
 * after a rotation, the previous one; empty strings are skipped) — or, for a secret that is
 * a subscription's ed25519 public key (`whpk_…`, signing `ed25519`), one of the `v1a,…`
 * signatures is its ed25519 signature. HMAC signatures are compared in constant time. Rejects with WebhookVerificationError when the push does not verify: await
 * it — an unawaited call accepts everything.
 *
 * WebCrypto (crypto.subtle): it runs on Node, Deno, Bun, Workers, edge runtimes and browsers.
 * rawBody must be the bytes as received: a body parsed and serialized again does not verify.
 */
export async function verifyAsync(
  secrets: string | readonly (string | undefined | null)[],
  headers: HeadersLike,
  rawBody: RawBody,
  opts: VerifyOptions = {},
): Promise<void> {
  const { id, ts, given, givenA } = pushSignatures(headers, opts);
  const body = bytes(rawBody);
  let matched = false;
  for (const secret of secretList(secrets)) {
    if (secret.startsWith(PUBLIC_KEY_PREFIX)) {
      if (await verifyV1aAsync(secret, id, ts, body, givenA)) matched = true;
      continue;
    }
    const want = await macAsync(secret, id, ts, body);
    for (const sig of given) if (constantTimeEqual(sig, want)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('no_matching_signature', 'no signature matches a signing secret');
}

/** What a push handler gets beside its message. */
export interface PushContext {
  /** The whole push: its subscription, queue and every message of the batch. */
  batch: PushBatch;
}

/**
 * Processes one pushed message; its result is the message's outcome as for a consumer's
 * Handler (nothing: ack; retry, retryAfter, deadLetter, defer; a throw retries).
 */
export type PushHandler = (message: PushedMessage, ctx: PushContext) => HandlerResult | Promise<HandlerResult>;

export interface PushReceiverOptions {
  /** The subscription's signing secrets (the current one, and the previous during a rotation). */
  secrets: string | readonly (string | undefined | null)[];
  handler: PushHandler;
  toleranceSeconds?: number;
  /** Handlers running at once for one push (default 10); a message group runs in order. */
  concurrency?: number;
  /** The largest push body accepted (default 32 MiB). */
  maxBodyBytes?: number;
  /** Seconds a message whose handler threw waits before it is retried (default 0). */
  errorRetryAfter?: (message: PushedMessage, error: unknown) => number;
  /** Told about rejected pushes and handler failures (default: ignored). */
  onError?: (err: unknown) => void;
  /** The clock, in milliseconds (default Date.now). */
  now?: () => number;
}

/** A receiver's answer: the status and the JSON body. */
export interface PushAnswer {
  status: number;
  body: PushResults | { error: { code: string; message: string } };
}

/** @internal */
export function failure(status: number, code: string, message: string): PushAnswer {
  return { status, body: { error: { code, message } } };
}

type Result = PushResults['results'][number];

/**
 * Verifies and runs one push, whatever the runtime: the handlers of createPushHandler and
 * createNodePushHandler are built on it.
 */
export async function handlePush(o: PushReceiverOptions, headers: HeadersLike, rawBody: RawBody): Promise<PushAnswer> {
  const report = (e: unknown) => {
    try {
      o.onError?.(e);
    } catch {
      // a throwing onError must not fail the push
    }
  };
  const body = bytes(rawBody);
  try {
    await verifyAsync(o.secrets, headers, body, { toleranceSeconds: o.toleranceSeconds, now: o.now });
  } catch (e) {
    report(e);
    return failure(401, 'unauthenticated', 'the push signature does not verify');
  }
  let batch: PushBatch;
  try {
    batch = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body)) as PushBatch;
    if (!batch || !Array.isArray(batch.messages)) throw new Error('no messages');
  } catch (e) {
    report(e);
    return failure(400, 'invalid_argument', 'the push body is not a batch');
  }
  return { status: 200, body: { results: await runBatch(o, batch, report) } };
}

// runBatch runs the handler for each message: one lane per message group (in order within
// it), one per message without a group, at most concurrency lanes at once.
async function runBatch(o: PushReceiverOptions, batch: PushBatch, report: (e: unknown) => void): Promise<Result[]> {
  const results: Result[] = new Array(batch.messages.length);
  const lanes: number[][] = [];
  const byGroup = new Map<string, number[]>();
  batch.messages.forEach((m, i) => {
    if (m.groupId === undefined || m.groupId === '') return void lanes.push([i]);
    let lane = byGroup.get(m.groupId);
    if (!lane) {
      lane = [];
      byGroup.set(m.groupId, lane);
      lanes.push(lane);
    }
    lane.push(i);
  });
  const one = async (m: PushedMessage): Promise<Result> => {
    let r: { value: unknown } | { error: unknown };
    try {
      r = { value: await withProcessSpan(batch.queue?.name ?? '', m, () => o.handler(m, { batch }), outcomeOf) };
    } catch (error) {
      r = { error };
    }
    const { outcome, error } = outcomeOf(r);
    let delay = outcome.kind === 'retry' ? outcome.delaySeconds : 0;
    if (error !== undefined) {
      report(error);
      if (o.errorRetryAfter) {
        try {
          delay = Math.max(0, Math.ceil(o.errorRetryAfter(m, error)));
        } catch (e) {
          report(e);
        }
      }
    }
    const res: Result = { messageId: m.messageId, outcome: outcome.kind };
    if (outcome.kind === 'retry' && delay > 0) res.retryAfterSeconds = Math.min(delay, 43200);
    if (outcome.kind === 'dead-letter' && outcome.reason) res.reason = outcome.reason.slice(0, 256);
    return res;
  };
  let next = 0;
  const worker = async () => {
    while (next < lanes.length) {
      for (const i of lanes[next++]!) results[i] = await one(batch.messages[i]!);
    }
  };
  const n = Math.max(1, Math.min(o.concurrency ?? 10, lanes.length));
  await Promise.all(Array.from({ length: n }, worker));
  return results;
}

/** @internal */
export const json = { 'content-type': 'application/json' };

/**
 * A push endpoint for fetch-style runtimes (Next.js route handlers, Cloudflare Workers, Deno,
 * Bun): `(Request) => Promise<Response>`. It answers 401 to a push that does not verify, and
 * 200 `{"results": [...]}` with each message's outcome.
 */
export function createPushHandler(o: PushReceiverOptions): (req: Request) => Promise<Response> {
  const limit = o.maxBodyBytes ?? 32 << 20;
  return async (req: Request) => {
    if (req.method !== 'POST') {
      const a = failure(405, 'method_not_allowed', 'a push is a POST');
      return new Response(JSON.stringify(a.body), { status: 405, headers: { ...json, allow: 'POST' } });
    }
    if (Number(req.headers.get('content-length') ?? 0) > limit) {
      const a = failure(413, 'payload_too_large', 'the push body is too large');
      return new Response(JSON.stringify(a.body), { status: a.status, headers: json });
    }
    const raw = new Uint8Array(await req.arrayBuffer());
    const a =
      raw.byteLength > limit ? failure(413, 'payload_too_large', 'the push body is too large') : await handlePush(o, req.headers, raw);
    return new Response(JSON.stringify(a.body), { status: a.status, headers: json });
  };
}
