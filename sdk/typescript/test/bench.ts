// The consumer's throughput against a real `queues serve` (npm run bench): N queued
// messages drained by consume() with a no-op handler, beside the Go SDK's Consume on the
// same server. No target: a measurement. Env: BENCH_MESSAGES (3000), BENCH_CONCURRENCY
// (32), BENCH_ROUNDS (3), BENCH_POLLERS (the consumer's default).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { QueuesClient } from '../src/index.js';
import { binDir, qname, startServer } from './server.js';

const n = Number(process.env.BENCH_MESSAGES ?? 3000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

async function fill(c: QueuesClient, q: string): Promise<void> {
  const batches = Array.from({ length: Math.ceil(n / 10) }, (_, i) =>
    Array.from({ length: Math.min(10, n - i * 10) }, (_, j) => ({ body: `message ${i * 10 + j}` })),
  );
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < batches.length) await c.sendMessages(q, batches[next++]!);
    }),
  );
}

async function drainTS(c: QueuesClient, q: string): Promise<number> {
  let handled = 0;
  const ac = new AbortController();
  const start = performance.now();
  let end = start;
  await c.consume(
    q,
    () => {
      if (++handled === n) {
        end = performance.now();
        ac.abort();
      }
    },
    { concurrency, signal: ac.signal, waitSeconds: 1, ...(process.env.BENCH_POLLERS ? { pollers: Number(process.env.BENCH_POLLERS) } : {}) },
  );
  return n / ((end - start) / 1000);
}

const srv = await startServer();
try {
  const c = srv.client;
  const run = promisify(execFile);
  const ts: number[] = [];
  const go: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const q = qname('bench');
    await c.createQueue({ name: q });
    await fill(c, q);
    ts.push(await drainTS(c, q));
    const g = qname('bench-go');
    await c.createQueue({ name: g });
    await fill(c, g);
    const out = await run(join(binDir, 'gointerop'), ['drain', g, String(n), String(concurrency)], {
      env: { ...process.env, QUEUES_URL: srv.url, QUEUES_TOKEN: srv.token },
    });
    go.push(Number(out.stdout.trim()));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const fmt = (xs: number[]) => xs.map((x) => Math.round(x)).join(', ');
  console.log(`${n} messages, concurrency ${concurrency}, no-op handler, queues serve (embedded), ${rounds} rounds`);
  console.log(`TypeScript consume: median ${Math.round(median(ts))} msg/s (${fmt(ts)})`);
  console.log(`Go Consume:         median ${Math.round(median(go))} msg/s (${fmt(go)})`);
} finally {
  await srv.close();
}
