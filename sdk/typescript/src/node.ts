// The package's `./node` entry (`@queueshq/queues/node`): everything of the core, and what
// needs Node — a synchronous verify and sign on node:crypto, and the push handler for Node's
// http module and Express. The core (`@queueshq/queues`) imports no node: module, so it loads
// on edge runtimes and in browsers.
import { Buffer } from 'node:buffer';
import { createHmac, createPublicKey, timingSafeEqual, verify as cryptoVerify } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  PUBLIC_KEY_PREFIX,
  WebhookVerificationError,
  bytes,
  publicKeyBytes,
  signedContent,
  failure,
  handlePush,
  json,
  pushSignatures,
  secretBytes,
  secretList,
  type HeadersLike,
  type PushAnswer,
  type PushReceiverOptions,
  type RawBody,
  type VerifyOptions,
} from './push.js';

export * from './index.js';

function mac(secret: string, id: string, timestamp: string, body: Uint8Array): Buffer {
  return createHmac('sha256', secretBytes(secret)).update(`${id}.${timestamp}.`).update(body).digest();
}

/**
 * The `webhook-signature` value (`v1,<base64>`) of a push signed with secret, as the pusher
 * makes it; for testing a receiver. Synchronous, on node:crypto (signAsync is the core's).
 */
export function sign(secret: string, id: string, timestampSeconds: number, rawBody: RawBody): string {
  return `v1,${mac(secret, id, String(Math.floor(timestampSeconds)), bytes(rawBody)).toString('base64')}`;
}

/**
 * verifyAsync of the core, synchronous, on node:crypto: throws WebhookVerificationError when
 * the push does not verify. Signatures are compared in constant time (timingSafeEqual).
 */
export function verify(
  secrets: string | readonly (string | undefined | null)[],
  headers: HeadersLike,
  rawBody: RawBody,
  opts: VerifyOptions = {},
): void {
  const { id, ts, given, givenA } = pushSignatures(headers, opts);
  const body = bytes(rawBody);
  let matched = false;
  for (const secret of secretList(secrets)) {
    if (secret.startsWith(PUBLIC_KEY_PREFIX)) {
      const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKeyBytes(secret)).toString('base64url') }, format: 'jwk' });
      const data = signedContent(id, ts, body);
      for (const sig of givenA) if (cryptoVerify(null, data, key, sig)) matched = true;
      continue;
    }
    const want = mac(secret, id, ts, body);
    // Lengths are public (a SHA-256 HMAC is 32 bytes); the contents are compared in constant time.
    for (const sig of given) if (sig.length === want.length && timingSafeEqual(sig, want)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('no_matching_signature', 'no signature matches a signing secret');
}

/** A request as Node's http module or Express hands it over. */
export type NodeRequest = IncomingMessage & { body?: unknown; rawBody?: unknown };

/**
 * A push endpoint for Node's http module and Express: `(req, res) => void`. Mount it before
 * any JSON body parser (or behind `express.raw({type: 'application/json'})`): the signature
 * covers the raw bytes.
 */
export function createNodePushHandler(o: PushReceiverOptions): (req: NodeRequest, res: ServerResponse) => Promise<void> {
  const limit = o.maxBodyBytes ?? 32 << 20;
  const send = (res: ServerResponse, a: PushAnswer, extra: Record<string, string> = {}) => {
    const text = JSON.stringify(a.body);
    res.writeHead(a.status, { ...json, 'content-length': Buffer.byteLength(text), ...extra });
    res.end(text);
  };
  return async (req, res) => {
    try {
      if (req.method !== 'POST') return send(res, failure(405, 'method_not_allowed', 'a push is a POST'), { allow: 'POST' });
      const raw = await readBody(req, limit);
      if (raw === 'too large') return send(res, failure(413, 'payload_too_large', 'the push body is too large'));
      if (raw === 'parsed') {
        return send(res, failure(500, 'internal', 'the body was parsed before the push receiver; mount it with a raw body'));
      }
      send(res, await handlePush(o, req.headers, raw));
    } catch (e) {
      o.onError?.(e);
      if (!res.headersSent) send(res, failure(500, 'internal', 'the push receiver failed'));
      else res.destroy();
    }
  };
}

async function readBody(req: NodeRequest, limit: number): Promise<Uint8Array | 'too large' | 'parsed'> {
  for (const b of [req.rawBody, req.body]) {
    if (b instanceof Uint8Array) return b.byteLength > limit ? 'too large' : b;
    if (typeof b === 'string') return bytes(b);
  }
  if (req.body !== undefined && req.readableEnded) return 'parsed';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > limit) return 'too large';
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}
