// The snippets of docs/sdk-typescript.md, type-checked with the tests (never run), so that
// the documented API cannot drift from the code.
import { createServer } from 'node:http';
import { QueuesClient, createPushHandler, deadLetter, retryAfter } from '../src/index.js';
import { createNodePushHandler } from '../src/node.js';

declare function ship(order: unknown): Promise<boolean>;
declare function handle(body: string): Promise<void>;
declare function isValid(body: string): boolean;

export async function consumer(): Promise<void> {
  const queues = new QueuesClient(); // $QUEUES_URL (default http://127.0.0.1:8080) and $QUEUES_TOKEN
  const stop = new AbortController(); process.on('SIGTERM', () => stop.abort());
  await queues.consume('orders', async (m) => { if (!(await ship(JSON.parse(m.body)))) return retryAfter(60); },
    { concurrency: 32, signal: stop.signal });
}

export const POST = createPushHandler({
  secrets: [process.env.QUEUES_SIGNING_SECRET!, process.env.QUEUES_PREVIOUS_SECRET], // during a rotation
  handler: async (m) => (isValid(m.body) ? await handle(m.body) : deadLetter('invalid body')),
});

export function node(secret: string) {
  return createServer(createNodePushHandler({ secrets: [secret], handler: async (m) => handle(m.body) }));
}
