// consume() against a real `queues serve`: each outcome, the heartbeat, batched acks,
// graceful stop and the shutdown deadline.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  ConsumerError,
  QueuesClient,
  cancel,
  deadLetter,
  defer,
  retry,
  retryAfter,
  type ReceivedMessage,
} from '../src/index.js';
import { startProxy } from './proxy.js';
import { qname, startServer, until, type Server } from './server.js';

let srv: Server;
let c: QueuesClient;
before(async () => {
  srv = await startServer();
  c = srv.client;
});
after(() => srv?.close());

async function sendAll(queue: string, bodies: string[]): Promise<void> {
  for (let i = 0; i < bodies.length; i += 10) {
    const r = await c.sendMessages(queue, bodies.slice(i, i + 10).map((body) => ({ body })));
    assert.deepEqual(r.failed, []);
  }
}

// Every test runs twice: over the receive stream (the default) and polling (`polling: true`,
// and the stream's fallback), whose settling must be the same.
for (const polling of [false, true]) {
describe(polling ? 'polling' : 'receive stream', () => {
  test('a handler that returns nothing acknowledges; the acks are sent in batches', async () => {
    const q = qname('ack');
    await c.createQueue({ name: q });
    await sendAll(q, Array.from({ length: 60 }, (_, i) => `m${i}`));
    let ackCalls = 0;
    let acked = 0;
    let receives = 0;
    const counting = new QueuesClient({
      url: srv.url,
      token: srv.token,
      fetch: async (input, init) => {
        if (String(input).endsWith('/receive')) receives++;
        if (String(input).endsWith('/v1/receipts/ack')) {
          ackCalls++;
          acked += (JSON.parse(String(init!.body)) as { receiptHandles: string[] }).receiptHandles.length;
        }
        return fetch(input, init);
      },
    });
    const seen = new Set<string>();
    const ac = new AbortController();
    const done = counting.consume(
      q,
      async (m) => {
        seen.add(m.body);
        if (seen.size === 60) ac.abort();
      },
      { concurrency: 8, waitSeconds: 1, signal: ac.signal, polling, ackIntervalMs: 100 },
    );
    await done;
    assert.equal(seen.size, 60);
    if (polling) {
      assert.ok(receives > 0);
      assert.equal(acked, 60, 'every ack sent by the time consume resolves');
    } else {
      // Over the stream: no receive requests, and the acks the stream carried are not fetches.
      assert.equal(receives, 0, 'the stream delivered everything');
      assert.ok(acked <= 60);
    }
    assert.ok(ackCalls < 60, `acks batched: ${ackCalls} calls for 60 messages`);
    const counts = (await c.getQueue(q)).counts;
    assert.equal(counts.visible + counts.inFlight, 0);
  });

  test('each outcome settles its message: retry, retry after, dead-letter, defer, throw', async () => {
    const dlq = await c.createQueue({ name: qname('out-dlq') });
    const q = qname('out');
    await c.createQueue({ name: q, redrive: { deadLetterQueue: dlq.id, maxReceiveCount: 10 } });
    await sendAll(q, ['retry', 'later', 'dead', 'defer', 'throw', 'throw-outcome']);
    const calls = new Map<string, number[]>(); // body → receiveCounts seen
    const deferred: ReceivedMessage[] = [];
    const errors: ConsumerError[] = [];
    const ac = new AbortController();
    const finished = () =>
      (calls.get('retry')?.length ?? 0) >= 2 &&
      (calls.get('throw')?.length ?? 0) >= 2 &&
      ['later', 'dead', 'defer', 'throw-outcome'].every((b) => calls.has(b));
    const safety = setTimeout(() => ac.abort(), 20000); // fail by the assertions below, not a hang
    const done = c.consume(
      q,
      (m) => {
        calls.set(m.body, [...(calls.get(m.body) ?? []), m.receiveCount]);
        if (finished()) setImmediate(() => ac.abort());
        const first = m.receiveCount === 1;
        switch (m.body) {
          case 'retry':
            return first ? retry() : undefined;
          case 'later':
            return retryAfter(600);
          case 'dead':
            return deadLetter('bad body');
          case 'defer':
            deferred.push(m);
            return defer();
          case 'throw':
            if (first) throw new Error('boom');
            return;
          case 'throw-outcome':
            throw deadLetter('thrown');
        }
      },
      { concurrency: 4, waitSeconds: 1, signal: ac.signal, polling, onError: (e) => errors.push(e) },
    );
    await done;
    clearTimeout(safety);
    assert.deepEqual(calls.get('retry'), [1, 2], 'retry: visible again at once, received again');
    assert.deepEqual(calls.get('throw'), [1, 2], 'a throw retries');
    assert.ok(errors.some((e) => e.op === 'handler' && e.messageId && /boom/.test(e.message)), 'onError saw the throw');
    assert.deepEqual(calls.get('later'), [1]);
    assert.deepEqual(calls.get('defer'), [1]);

    const inFlight = (await c.browseMessages(q, { state: 'inFlight' })).messages;
    assert.deepEqual(inFlight.map((m) => m.body).sort(), ['defer', 'later']);
    const later = inFlight.find((m) => m.body === 'later')!;
    assert.ok(Date.parse(later.visibleAt) > Date.now() + 500_000, 'retry after 600 s stays in flight');
    // The deferred message is the application's to settle, by its handle.
    await c.ack(deferred[0]!.receiptHandle!);

    const dead: Record<string, string | undefined> = {};
    for (const m of (await c.browseMessages(dlq.id)).messages) dead[m.body] = m.deadLetter?.reason;
    assert.deepEqual(dead, { dead: 'bad body', 'throw-outcome': 'thrown' });
  });

  test('cancel() returns the message uncounted: it comes again with the same receiveCount', async () => {
    const q = qname('cancel');
    await c.createQueue({ name: q });
    await c.send(q, 'm');
    const ac = new AbortController();
    const counts: number[] = [];
    await c.consume(
      q,
      (m) => {
        counts.push(m.receiveCount);
        if (counts.length === 1) return cancel();
        ac.abort();
        return undefined;
      },
      { waitSeconds: 1, signal: ac.signal, polling },
    );
    assert.deepEqual(counts, [1, 1]);
  });

  test('filter: a consumer takes only the messages its filter selects', async () => {
    const q = qname('filter');
    await c.createQueue({ name: q });
    await c.sendMessages(q, [
      { body: 'a', attributes: { kind: 'invoice' } },
      { body: 'b', attributes: { kind: 'refund' } },
      { body: 'c', attributes: { kind: 'invoice' } },
    ]);
    const ac = new AbortController();
    const seen: string[] = [];
    await c.consume(
      q,
      (m) => {
        seen.push(m.body);
        if (seen.length === 2) ac.abort();
      },
      { waitSeconds: 1, signal: ac.signal, polling, filter: { attributes: { kind: 'invoice' } } },
    );
    assert.deepEqual(seen.sort(), ['a', 'c']);
    const left = (await c.browseMessages(q)).messages;
    assert.deepEqual(left.map((m) => [m.body, m.receiveCount]), [['b', 0]]);
  });

  test('consumerId: an exclusive fifo queue binds the group to the consumer that takes it', async () => {
    const q = qname('exclusive');
    const created = await c.createQueue({ name: q, type: 'fifo', groupPolicy: 'exclusive', maxGroupsPerConsumer: 3 });
    assert.equal(created.groupPolicy, 'exclusive');
    assert.equal(created.maxGroupsPerConsumer, 3);
    await assert.rejects(c.receive(q, { waitSeconds: 0 }), (e: Error & { status?: number }) => e.status === 400);
    await c.sendMessages(q, [
      { body: 'a', groupId: 'g1' },
      { body: 'b', groupId: 'g1', endGroup: true },
    ]);
    const ac = new AbortController();
    const seen: string[] = [];
    let bound: (string | null | undefined)[] = [];
    await c.consume(
      q,
      async (m) => {
        if (seen.length === 0) bound = (await c.listGroups(q)).groups.map((g) => g.consumerId);
        seen.push(m.body);
        if (seen.length === 2) ac.abort();
      },
      { waitSeconds: 1, signal: ac.signal, polling, consumerId: 'w1', concurrency: 1 },
    );
    assert.deepEqual(seen, ['a', 'b']);
    assert.deepEqual(bound, ['w1']);
  });

  test('errorRetryAfter keeps a failed message in flight that long', async () => {
    const q = qname('era');
    await c.createQueue({ name: q });
    await c.send(q, 'fails');
    const ac = new AbortController();
    let seen: ReceivedMessage | undefined;
    await c.consume(
      q,
      (m) => {
        seen = m;
        ac.abort();
        throw new Error('no');
      },
      { waitSeconds: 1, signal: ac.signal, polling, errorRetryAfter: () => 300 },
    );
    const [m] = (await c.browseMessages(q, { state: 'inFlight' })).messages;
    assert.equal(m?.messageId, seen?.messageId);
    assert.ok(Date.parse(m!.visibleAt) > Date.now() + 200_000);
  });

  test('the heartbeat keeps a long handler’s message in flight', async () => {
    const q = qname('beat');
    await c.createQueue({ name: q, visibilityTimeoutSeconds: 30 });
    await c.send(q, 'slow');
    const ac = new AbortController();
    const receiveCounts: number[] = [];
    let beats = 0;
    const watching = new QueuesClient({
      url: srv.url,
      token: srv.token,
      fetch: async (input, init) => {
        if (String(input).endsWith('/v1/receipts/visibility')) beats++;
        return fetch(input, init);
      },
    });
    await watching.consume(
      q,
      async (m) => {
        receiveCounts.push(m.receiveCount);
        if (m.receiveCount > 1) return ac.abort();
        // Outlive the 2 s visibility timeout by far; without the heartbeat the message
        // comes back and this consumer (with an idle slot) receives it again.
        try {
          await until(() => beats >= 3 || receiveCounts.length > 1, 15000, 'three heartbeats');
        } finally {
          ac.abort();
        }
      },
      { concurrency: 2, waitSeconds: 1, visibilityTimeoutSeconds: 2, signal: ac.signal, polling },
    );
    assert.deepEqual(receiveCounts, [1]);
    const counts = (await c.getQueue(q)).counts;
    assert.equal(counts.visible + counts.inFlight, 0, 'acked after the heartbeats');
  });

  test('stop: receives end, the running handler finishes and is settled', async () => {
    const q = qname('stop');
    await c.createQueue({ name: q });
    await c.send(q, 'in progress');
    const ac = new AbortController();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    let resolved = false;
    const done = c
      .consume(
        q,
        async () => {
          started = true;
          await gate;
        },
        { waitSeconds: 1, signal: ac.signal, polling },
      )
      .then(() => (resolved = true));
    await until(() => started, 10000, 'the handler to start');
    ac.abort();
    await c.send(q, 'after stop');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(resolved, false, 'consume waits for the running handler');
    release();
    await done;
    const msgs = (await c.browseMessages(q, { state: 'visible' })).messages;
    assert.deepEqual(msgs.map((m) => m.body), ['after stop'], 'acked the finished one; received nothing after the stop');
    assert.equal((await c.getQueue(q)).counts.inFlight, 0);
  });

  test('at the shutdown deadline a stuck handler is aborted and its message released', async () => {
    const q = qname('stuck');
    await c.createQueue({ name: q });
    await c.send(q, 'stuck');
    const ac = new AbortController();
    let handlerSignal: AbortSignal | undefined;
    const done = c.consume(
      q,
      async (_m, ctx) => {
        handlerSignal = ctx.signal;
        ac.abort();
        await new Promise((r) => ctx.signal.addEventListener('abort', r));
        return deadLetter('ignored: the result of an abandoned handler');
      },
      { waitSeconds: 1, signal: ac.signal, polling, shutdownTimeoutMs: 200 },
    );
    await done;
    assert.equal(handlerSignal?.aborted, true);
    const [m] = (await c.browseMessages(q, { state: 'visible' })).messages;
    assert.equal(m?.body, 'stuck', 'released: visible again at once');
    assert.equal(m?.receiveCount, 1);
  });

  test('a queue that does not exist rejects consume', async () => {
    const e = await c.consume('no-such-queue', () => undefined, { polling }).catch((e) => e);
    assert.equal(e.code, 'not_found');
    const e2 = await c.consume('no-such-queue', () => undefined, { visibilityTimeoutSeconds: 5, polling }).catch((e) => e);
    assert.equal(e2.code, 'not_found', 'a receive that keeps failing stops the consumer');
  });

  test('an already aborted signal resolves at once, receiving nothing', async () => {
    const q = qname('pre');
    await c.createQueue({ name: q });
    await c.send(q, 'untouched');
    const ac = new AbortController();
    ac.abort();
    let called = 0;
    await c.consume(q, () => void called++, { signal: ac.signal, polling });
    assert.equal(called, 0);
    assert.equal((await c.getQueue(q)).counts.visible, 1);
  });

  test('an at-most-once queue hands each message out once, without a handle; no outcome settles anything', async () => {
    const q = qname('once');
    const created = await c.createQueue({ name: q, delivery: 'atMostOnce' });
    assert.equal(created.delivery, 'atMostOnce');
    await sendAll(q, ['ack', 'retry', 'dead', 'throw']);
    let receiptCalls = 0;
    const observing = new QueuesClient({
      url: srv.url,
      token: srv.token,
      fetch: async (input, init) => {
        if (String(input).includes('/v1/receipts/')) receiptCalls++;
        return fetch(input, init);
      },
    });
    const seen: ReceivedMessage[] = [];
    const ac = new AbortController();
    const safety = setTimeout(() => ac.abort(), 20000);
    await observing.consume(
      q,
      (m) => {
        seen.push(m);
        if (seen.length === 4) setImmediate(() => ac.abort());
        switch (m.body) {
          case 'retry':
            return retry();
          case 'dead':
            return deadLetter('x');
          case 'throw':
            throw new Error('boom');
        }
      },
      { concurrency: 4, waitSeconds: 1, signal: ac.signal, polling, onError: () => {} },
    );
    clearTimeout(safety);
    assert.deepEqual(seen.map((m) => m.body).sort(), ['ack', 'dead', 'retry', 'throw']);
    for (const m of seen) {
      assert.equal(m.receiptHandle, undefined);
      assert.equal(m.receiveCount, 1);
    }
    assert.equal(receiptCalls, 0, 'no receipt call for a message without a handle');
    assert.deepEqual(await c.receive(q, { maxMessages: 10, waitSeconds: 0 }), [], 'nothing comes back');
    const counts = (await c.getQueue(q)).counts;
    assert.equal(counts.visible + counts.inFlight + counts.delayed, 0);
  });
});
}

describe('receive stream', () => {
  // Drains n messages through a proxy with consume's defaults; answers the bodies seen.
  async function drainVia(proxyURL: string, q: string, n: number, vt: number): Promise<Set<string>> {
    const seen = new Set<string>();
    const ac = new AbortController();
    const safety = setTimeout(() => ac.abort(), 30000); // fail by the assertions, not a hang
    await new QueuesClient({ url: proxyURL, token: srv.token }).consume(
      q,
      (m) => {
        seen.add(m.body);
        if (seen.size === n) ac.abort();
      },
      { concurrency: 5, visibilityTimeoutSeconds: vt, waitSeconds: 1, signal: ac.signal },
    );
    clearTimeout(safety);
    return seen;
  }

  test('a proxy that refuses the upgrade: the consumer polls instead', async () => {
    const q = qname('refused');
    await c.createQueue({ name: q });
    await sendAll(q, Array.from({ length: 20 }, (_, i) => `m${i}`));
    const p = await startProxy(srv.url, { refuseUpgrades: true });
    try {
      assert.equal((await drainVia(p.url, q, 20, 30)).size, 20);
      assert.equal(p.upgrades, 1, 'one upgrade tried, then polling');
      assert.ok(p.requests.some((r) => r.endsWith('/receive')), 'polled');
    } finally {
      await p.close();
    }
    assert.equal((await c.getQueue(q)).counts.visible, 0);
  });

  test('a stream that drops after delivering: the consumer reconnects and gets everything', async () => {
    const q = qname('dropped');
    await c.createQueue({ name: q });
    await sendAll(q, Array.from({ length: 20 }, (_, i) => `m${i}`));
    const p = await startProxy(srv.url, { cutFirstStream: true });
    try {
      // What the cut stream carried comes back when its 2 s visibility ends.
      assert.equal((await drainVia(p.url, q, 20, 2)).size, 20);
      assert.ok(p.upgrades >= 2, `reconnected: ${p.upgrades} upgrades`);
      assert.ok(!p.requests.some((r) => r.endsWith('/receive')), `no polling: ${p.requests}`);
    } finally {
      await p.close();
    }
    await until(async () => (await c.getQueue(q)).counts.visible + (await c.getQueue(q)).counts.inFlight === 0, 10000, 'every message acknowledged');
  });
});
