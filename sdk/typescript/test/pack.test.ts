// The package as a user gets it: `npm pack` (of the dist/ the test run built), installed into
// a clean temporary project, imported through its exports map by ESM import and CommonJS
// require, core and ./node, and type-checked from a .mts and a .cts file.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { pkgRoot } from './server.js';

const run = promisify(execFile);

const esm = `
import { QueuesClient, NotFoundError, QueuesError, verifyAsync, signAsync, VERSION } from '@queueshq/queues';
import { verify, sign, createNodePushHandler, QueuesClient as FromNode } from '@queueshq/queues/node';
const s = 'whsec_' + btoa('a pack test secret');
const h = { 'webhook-id': 'm', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)) };
h['webhook-signature'] = sign(s, 'm', Number(h['webhook-timestamp']), 'b');
verify(s, h, 'b');
await verifyAsync(s, h, 'b');
if ((await signAsync(s, 'm', Number(h['webhook-timestamp']), 'b')) !== h['webhook-signature']) throw new Error('signAsync');
if (FromNode !== QueuesClient) throw new Error('./node re-exports the same core');
if (!(new NotFoundError({ code: 'not_found', message: 'x', status: 404 }) instanceof QueuesError)) throw new Error('errors');
if (typeof createNodePushHandler !== 'function') throw new Error('createNodePushHandler');
console.log('esm', VERSION, new QueuesClient({ url: 'http://127.0.0.1:1' }).url);
`;

const cjs = `
const { QueuesClient, VERSION, verifyAsync } = require('@queueshq/queues');
const { verify, sign } = require('@queueshq/queues/node');
const s = 'whsec_' + Buffer.from('a pack test secret').toString('base64');
const ts = Math.floor(Date.now() / 1000);
const h = { 'webhook-id': 'm', 'webhook-timestamp': String(ts), 'webhook-signature': sign(s, 'm', ts, 'b') };
verify(s, h, 'b');
verifyAsync(s, h, 'b').then(() => console.log('cjs', VERSION, new QueuesClient({ url: 'http://127.0.0.1:1' }).url));
`;

const typed = `
import { QueuesClient, NotFoundError, type ReceivedMessage } from '@queueshq/queues';
import { verify } from '@queueshq/queues/node';
const c: QueuesClient = new QueuesClient({ url: 'http://127.0.0.1:1' });
const f = (m: ReceivedMessage): string => m.body;
const e: NotFoundError | undefined = undefined;
verify('whsec_x', {}, '');
export { c, f, e };
`;

test('npm pack, install into a clean project, import (ESM and CommonJS, core and ./node), type-check', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'queues-sdk-pack-'));
  try {
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: pkgRoot });
    const [info] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
    const files = info.files.map((f) => f.path);
    for (const want of ['LICENSE', 'package.json', 'dist/esm/index.js', 'dist/esm/node.d.ts', 'dist/cjs/index.js', 'dist/cjs/package.json', 'dist/cjs/node.d.ts']) {
      assert.ok(files.includes(want), `the tarball has ${want}`);
    }
    assert.ok(!files.some((f) => f.startsWith('test/') || f.startsWith('build-test/') || f.startsWith('.bin/')), 'no tests or binaries');
    const project = join(dir, 'project');
    await run('mkdir', ['-p', project]);
    await writeFile(join(project, 'package.json'), '{"name": "clean", "private": true}\n');
    await run('npm', ['install', '--no-audit', '--no-fund', '--omit=optional', '--ignore-scripts', join(dir, info.filename)], { cwd: project });
    await writeFile(join(project, 'esm.mjs'), esm);
    await writeFile(join(project, 'cjs.cjs'), cjs);
    const a = await run(process.execPath, ['esm.mjs'], { cwd: project });
    assert.equal(a.stdout.trim(), 'esm 0.1.0 http://127.0.0.1:1');
    const b = await run(process.execPath, ['cjs.cjs'], { cwd: project });
    assert.equal(b.stdout.trim(), 'cjs 0.1.0 http://127.0.0.1:1');
    await writeFile(join(project, 'typed.mts'), typed);
    await writeFile(join(project, 'typed.cts'), typed);
    const tsc = join(pkgRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const types = ['--typeRoots', join(pkgRoot, 'node_modules', '@types'), '--types', 'node'];
    await run(process.execPath, [tsc, '--noEmit', '--strict', '--skipLibCheck', 'false', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--lib', 'es2022,dom', ...types, 'typed.mts', 'typed.cts'], { cwd: project }).catch((e: { stdout: string }) => {
      assert.fail(`the package's types do not check from a clean project:\n${e.stdout}`);
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
