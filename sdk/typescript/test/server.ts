// Starts a real `queues serve` for a test file: embedded store in a temporary directory, a
// free port, an operator credential; stops it and removes the directory after.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { QueuesClient } from '../src/index.js';

export const pkgRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const binDir = join(pkgRoot, '.bin');

export interface Server {
  url: string;
  /** The every-scope token of the default project serve creates. */
  token: string;
  operatorToken: string;
  /** A client with the default project's token. */
  client: QueuesClient;
  /** A client with the operator credential. */
  operator: QueuesClient;
  close(): Promise<void>;
}

/** Starts a server; env adds to (or overrides) its environment, e.g. QUEUES_PUBLIC_URL. */
export async function startServer(env: Record<string, string> = {}): Promise<Server> {
  const bin = process.env.QUEUES_BIN || join(binDir, 'queues');
  const dataDir = await mkdtemp(join(tmpdir(), 'queues-sdk-ts-'));
  const operatorToken = `op-${randomBytes(16).toString('hex')}`;
  const child: ChildProcess = spawn(bin, ['serve'], {
    env: {
      ...process.env,
      QUEUES_DATA_DIR: dataDir,
      QUEUES_LISTEN: '127.0.0.1:0',
      QUEUES_ADMIN_LISTEN: '127.0.0.1:0',
      QUEUES_OPERATOR_TOKEN: operatorToken,
      QUEUES_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`queues serve did not start in 30 s: ${stderr}`)), 30000);
    child.once('exit', (code) => reject(new Error(`queues serve exited (${code}): ${stderr}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /is running at (http:\/\/\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });
  const token = (await readFile(join(dataDir, 'token'), 'utf8')).trim();
  return {
    url,
    token,
    operatorToken,
    client: new QueuesClient({ url, token }),
    operator: new QueuesClient({ url, token: operatorToken }),
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 10000);
        await exited;
        clearTimeout(t);
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

let seq = 0;
/** A queue name unique in this process. */
export function qname(prefix: string): string {
  return `${prefix}-${process.pid}-${++seq}`;
}

/** Resolves when cond() is true, checking every 20 ms, or rejects after ms. */
export async function until(cond: () => boolean | Promise<boolean>, ms = 10000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Runs edgecheck.ts in a child node: the built core on an edge runtime (no node: modules),
 * against the server and pushes the config names. Returns what it printed.
 */
export async function edgeCheck(config: Record<string, unknown>): Promise<Record<string, unknown>> {
  const script = join(pkgRoot, 'build-test', 'test', 'edgecheck.js');
  const { stdout } = await promisify(execFile)(process.execPath, ['--experimental-vm-modules', '--no-warnings', script, join(pkgRoot, 'dist', 'esm'), JSON.stringify(config)]);
  return JSON.parse(stdout) as Record<string, unknown>;
}

/** A TCP port free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
