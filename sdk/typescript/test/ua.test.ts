// The SDK names itself and its version in the User-Agent of its calls and of its stream
// upgrades, after the application's own token when it gives one. A plain HTTP server records
// what arrives; VERSION must be package.json's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { QueuesClient, VERSION } from '../src/index.js';
import { pkgRoot } from './server.js';

test('VERSION is package.json version', () => {
  const pkg = JSON.parse(readFileSync(join(pkgRoot, 'package.json'), 'utf8')) as { version: string };
  assert.equal(VERSION, pkg.version);
});

test('User-Agent is queues-typescript/<version>, after the application token, on calls and stream upgrades', async () => {
  const seen: IncomingHttpHeaders[] = [];
  const srv = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
  });
  srv.on('upgrade', (req, socket) => {
    seen.push(req.headers);
    socket.destroy();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    await new QueuesClient({ url, token: 't' }).health();
    const app = new QueuesClient({ url, token: 't', userAgent: 'billing/2.1' });
    await app.withToken('u').health();
    await assert.rejects(app.openTopicStream('prices', { from: 1 }));
    assert.deepEqual(
      seen.map((h) => h['user-agent']),
      [`queues-typescript/${VERSION}`, `billing/2.1 queues-typescript/${VERSION}`, `billing/2.1 queues-typescript/${VERSION}`],
    );
  } finally {
    srv.close();
  }
});
