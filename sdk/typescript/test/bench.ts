// The consumer's throughput against a real `queues serve` (npm run bench): N queued messages
// drained by consume() with a no-op handler — over the receive stream (the default) and
// polling — beside, on the same server in the same run, the Go SDK's Consume and `queues
// bench`'s consume phase with its raw client (-raw: polling, and -stream). No target: a
// measurement; on a shared machine compare the figures of one run, not runs. Env: BENCH_MESSAGES (20000),
// BENCH_CONCURRENCY (64), BENCH_ROUNDS (3).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { QueuesClient } from '../src/index.js';
import { binDir, qname, startServer } from './server.js';

const n = Number(process.env.BENCH_MESSAGES ?? 20000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const run = promisify(execFile);

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

async function drainTS(c: QueuesClient, q: string, polling: boolean): Promise<number> {
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
    { concurrency, signal: ac.signal, waitSeconds: 1, polling },
  );
  return n / ((end - start) / 1000);
}

// queuesBench runs `queues bench -phases consume` (it fills its own queue, untimed) and
// answers its msg/s.
async function queuesBench(url: string, token: string, extra: string[]): Promise<number> {
  const args = ['bench', '-url', url, '-token', token, '-phases', 'consume', '-count', String(n), '-json', '-quiet', ...extra];
  const out = await run(process.env.QUEUES_BIN || join(binDir, 'queues'), args, { maxBuffer: 1 << 24 });
  return (JSON.parse(out.stdout) as { phases: { msgsPerSec: number }[] }).phases[0]!.msgsPerSec;
}

const srv = await startServer();
try {
  const c = srv.client;
  const figures: Record<string, number[]> = {
    'TypeScript consume, receive stream': [],
    'TypeScript consume, polling': [],
    'Go SDK Consume (stream)': [],
    'queues bench consume (16 consumers, polling)': [],
    'queues bench -stream consume (16 streams)': [],
  };
  const series = Object.values(figures);
  for (let r = 0; r < rounds; r++) {
    for (const polling of [false, true]) {
      const q = qname('bench');
      await c.createQueue({ name: q });
      await fill(c, q);
      series[polling ? 1 : 0]!.push(await drainTS(c, q, polling));
    }
    const g = qname('bench-go');
    await c.createQueue({ name: g });
    await fill(c, g);
    const out = await run(join(binDir, 'gointerop'), ['drain', g, String(n), String(concurrency)], {
      env: { ...process.env, QUEUES_URL: srv.url, QUEUES_TOKEN: srv.token },
    });
    series[2]!.push(Number(out.stdout.trim()));
    series[3]!.push(await queuesBench(srv.url, srv.token, ['-raw']));
    series[4]!.push(await queuesBench(srv.url, srv.token, ['-raw', '-stream']));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const fmt = (xs: number[]) => xs.map((x) => Math.round(x)).join(', ');
  console.log(`${n} messages, no-op handler, concurrency ${concurrency}, queues serve (embedded), ${rounds} rounds, one run`);
  for (const [name, xs] of Object.entries(figures)) {
    console.log(`${name.padEnd(46)} median ${String(Math.round(median(xs))).padStart(6)} msg/s (${fmt(xs)})`);
  }
} finally {
  await srv.close();
}
