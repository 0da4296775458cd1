// The core imports and works on an edge runtime: edgecheck.ts runs the built package's ES
// modules in @edge-runtime/vm's context (no node: modules, no process or Buffer) against a
// real `queues serve`, and a push signed here (node:crypto) verifies there (WebCrypto).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sign } from '../src/node.js';
import { edgeCheck, qname, startServer, type Server } from './server.js';

let srv: Server;
before(async () => {
  srv = await startServer();
});
after(() => srv?.close());

test('the core runs on an edge runtime: WebCrypto verify and sign, the fetch push handler, the client', async () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const ts = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ subscription: 'qsb_edge', messages: [{ messageId: 'm1', body: 'hi', attributes: {}, receiveCount: 1 }] });
  const config = { secret, id: 'msg_edge', ts, body, sig: sign(secret, 'msg_edge', ts, body), url: srv.url, token: srv.token, queue: qname('edge') };
  const out = await edgeCheck(config);
  assert.equal(out.globals, 'undefined undefined undefined', 'the edge context has no process, Buffer or require');
  assert.equal(out.verified, true);
  assert.equal(out.forged, 'no_matching_signature');
  assert.equal(out.signed, config.sig, 'signAsync (WebCrypto) makes the signature node:crypto makes');
  assert.deepEqual(out.push, { status: 200, body: { results: [{ messageId: 'm1', outcome: 'retry', retryAfterSeconds: 7 }] } });
  assert.equal(out.received, 'from the edge');
  assert.equal(out.notFound, true, 'typed errors on the edge');
});
