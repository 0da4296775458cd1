import type { QueuesClient } from './client.js';
import { MAX_BATCH, MAX_RECEIPT_BATCH } from './limits.js';
import { QueuesError, isAuth, isCode, queuesError } from './errors.js';
import type { AttributeFilter, ReceivedMessage } from './openapi.js';
import { outcomeOf, type HandlerResult } from './outcome.js';
import { MAX_STREAM_CREDIT, ReceiveStream, receiveStreamURL, type StreamAnswer } from './receivestream.js';
import { withProcessSpan } from './tracing.js';

/** What a consumer's handler gets beside its message. */
export interface HandlerContext {
  /** Aborted when the consumer gives up on the handler at the shutdown deadline. */
  signal: AbortSignal;
}

/**
 * Processes one message. Its result settles the message: nothing or `ack()` acknowledges it,
 * `retry()` makes it visible again now, `retryAfter(s)` after s seconds, `deadLetter(reason)`
 * moves it to the dead-letter queue, `cancel()` returns it without counting the delivery,
 * `defer()` leaves it in flight for the application to
 * settle by its receipt handle. Throwing (or rejecting) retries it (see errorRetryAfter); a
 * thrown Outcome counts as returned.
 */
export type Handler = (message: ReceivedMessage, ctx: HandlerContext) => HandlerResult | Promise<HandlerResult>;

/** An error the consumer met and carried on after. */
export class ConsumerError extends Error {
  constructor(
    /** "receive", "ack", "retry", "dead-letter", "heartbeat", "release" or "handler". */
    readonly op: string,
    readonly messageId: string | undefined,
    override readonly cause: unknown,
  ) {
    super(`queues consumer: ${op}${messageId ? ` ${messageId}` : ''}: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'ConsumerError';
  }
}

export interface ConsumeOptions {
  /** Stops the consumer: receives stop, running handlers finish and are settled. */
  signal?: AbortSignal;
  /** Handlers running at once (default 10); it receives only as many messages as are idle. */
  concurrency?: number;
  /**
   * Receive by polling (`pollers` receive requests) even where the service offers the receive
   * stream. By default the consumer holds one receive stream (a WebSocket, docs/streaming.md):
   * it grants the room its handlers free as credit, and sends acknowledgements, retries and
   * dead-letterings on the same connection; it polls when the upgrade is refused (a proxy
   * that does not pass WebSockets, a runtime without a WebSocket).
   */
  polling?: boolean;
  /** Polling: receives that may wait at once (default concurrency/10, at least 1). */
  pollers?: number;
  /** Polling: each receive's long-polling wait (default 20). */
  waitSeconds?: number;
  /**
   * Each receive's visibility timeout (default the queue's, read once, or 30 when the token
   * may not read the queue). A handler running past half of it has its message's visibility
   * extended by this much again (heartbeat), until it returns.
   */
  visibilityTimeoutSeconds?: number;
  /** Receive only the messages this filter selects (docs/delivery-options.md#filtered-receive-and-browse); the others stay for other consumers. */
  filter?: AttributeFilter;
  /**
   * Names this consumer on every receive (docs/delivery-options.md#consumers-backlogs-and-fairness). Required on a fifo queue whose
   * groupPolicy is "exclusive": its message groups bind to this consumer (docs/fifo.md).
   */
  consumerId?: string;
  /**
   * How long, once stopped, the consumer waits for running handlers before it aborts their
   * signal and releases their messages (visible again at once; results ignored). Default 30 s.
   */
  shutdownTimeoutMs?: number;
  /** Acknowledgements per call (default and most 100). */
  ackBatchSize?: number;
  /** The longest an acknowledgement waits to be sent (default 50 ms). */
  ackIntervalMs?: number;
  /** Seconds a message whose handler threw stays in flight before it is retried (default 0). */
  errorRetryAfter?: (message: ReceivedMessage, error: unknown) => number;
  /** Told about the errors the consumer carries on after (default: ignored). */
  onError?: (err: ConsumerError) => void;
}

interface Delivery {
  m: ReceivedMessage;
  abandoned: boolean;
}

// Receive errors that will not go away by themselves: the consumer stops with them.
const fatalCodes = new Set(['not_found', 'unauthenticated', 'permission_denied', 'invalid_argument']);

/**
 * Receives from queue and runs handler for each message with bounded concurrency, settling
 * each from the handler's result, until opts.signal aborts. Resolves once stopped: receives
 * have ended, running handlers have finished (or been abandoned at shutdownTimeoutMs, their
 * messages released) and every acknowledgement is sent. Rejects, after the same shutdown,
 * with the QueuesError of a receive the service will keep refusing (the queue does not exist,
 * the token is not good for it).
 */
export async function consume(
  client: QueuesClient,
  queue: string,
  handler: Handler,
  opts: ConsumeOptions = {},
): Promise<void> {
  const concurrency = Math.max(1, Math.floor(opts.concurrency ?? 10));
  if (opts.signal?.aborted) return;
  let vt = opts.visibilityTimeoutSeconds ?? 0;
  if (!(vt > 0)) {
    try {
      const q = await client.getQueue(queue, { signal: opts.signal });
      vt = q.visibilityTimeoutSeconds > 0 ? q.visibilityTimeoutSeconds : 30;
    } catch (e) {
      if (opts.signal?.aborted) return;
      if (!isAuth(e)) throw e;
      vt = 30;
    }
  }
  const c = new Consumer(client, queue, handler, opts, concurrency, Math.max(1, Math.ceil(vt)));
  return c.run();
}

class Consumer {
  private idle: number;
  private waiters: (() => void)[] = [];
  private readonly stop: AbortController = new AbortController();
  private readonly hstop: AbortController = new AbortController();
  private readonly inflight = new Set<Delivery>();
  private readonly handlers = new Set<Promise<void>>();
  private readonly settling = new Set<Promise<void>>();
  private readonly flushes = new Set<Promise<void>>();
  private acks: string[] = [];
  private ackTimer: ReturnType<typeof setTimeout> | undefined;
  private fatal: QueuesError | undefined;
  private readonly pollers: number;
  private readonly waitSeconds: number;
  private readonly filter: AttributeFilter | undefined;
  private readonly consumerId: string | undefined;
  private readonly ackBatch: number;
  private readonly ackInterval: number;
  // The receive stream while one is open; granted is its credit not yet used by a batch,
  // unsent the part of it not yet written (sent once per microtask, for all handlers that
  // finished in it), delivered the batches of the current stream.
  private stream: ReceiveStream | undefined;
  private granted = 0;
  private unsent = 0;
  private creditQueued = false;
  private delivered = 0;

  constructor(
    private readonly client: QueuesClient,
    private readonly queue: string,
    private readonly handler: Handler,
    private readonly o: ConsumeOptions,
    concurrency: number,
    private readonly vt: number,
  ) {
    this.idle = concurrency;
    this.pollers = Math.min(concurrency, Math.max(1, Math.floor(o.pollers ?? concurrency / MAX_BATCH)));
    this.waitSeconds = Math.min(20, Math.max(0, Math.floor(o.waitSeconds ?? 20)));
    this.filter = o.filter;
    this.consumerId = o.consumerId;
    const b = Math.floor(o.ackBatchSize ?? MAX_RECEIPT_BATCH);
    this.ackBatch = b >= 1 && b <= MAX_RECEIPT_BATCH ? b : MAX_RECEIPT_BATCH;
    this.ackInterval = Math.max(1, o.ackIntervalMs ?? 50);
    if (o.signal) {
      if (o.signal.aborted) this.stop.abort(o.signal.reason);
      else o.signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  private readonly onAbort = () => this.halt();

  private report(op: string, id: string | undefined, err: unknown): void {
    if (err === undefined || !this.o.onError) return;
    try {
      this.o.onError(new ConsumerError(op, id, err));
    } catch {
      // a throwing onError must not stop the consumer
    }
  }

  private halt(): void {
    this.stop.abort();
    for (const w of this.waiters.splice(0)) w();
  }

  async run(): Promise<void> {
    await (this.o.polling ? this.pollAll() : this.streamLoop());
    this.o.signal?.removeEventListener('abort', this.onAbort);
    await this.drain();
    if (this.fatal) throw this.fatal;
  }

  // acquire waits for an idle handler slot; false once the consumer is stopping.
  private async acquire(): Promise<boolean> {
    while (this.idle === 0) {
      if (this.stop.signal.aborted) return false;
      await new Promise<void>((r) => this.waiters.push(r));
    }
    if (this.stop.signal.aborted) return false;
    this.idle--;
    return true;
  }

  private release(n: number): void {
    this.idle += n;
    if (this.stream) return this.grant();
    for (let i = 0; i < n && this.waiters.length > 0; i++) this.waiters.shift()!();
  }

  private async pollAll(): Promise<void> {
    const polls: Promise<void>[] = [];
    for (let i = 0; i < this.pollers; i++) polls.push(this.poll());
    await Promise.all(polls);
  }

  // streamLoop receives over receive streams, reconnecting (with backoff) when one ends, until
  // the consumer stops. When the very first upgrade is refused it polls instead: polling
  // answers every case, a missing queue included (which it reports as the fatal error it is).
  private async streamLoop(): Promise<void> {
    const signal = this.stop.signal;
    let failures = 0;
    while (!signal.aborted) {
      let s: ReceiveStream | undefined;
      try {
        const url = receiveStreamURL(this.client.url, this.queue, this.vt, this.filter, this.consumerId);
        s = await ReceiveStream.open(url, await this.client.streamHeaders(), (msgs) => this.batch(msgs), signal);
      } catch (e) {
        if (signal.aborted) return;
        if (isAuth(e)) {
          this.fatal ??= e;
          this.halt();
          return;
        }
        if (failures === 0) return this.pollAll();
        this.report('receive', undefined, e);
      }
      if (s && (await this.session(s))) failures = 0;
      failures++;
      await pause(Math.min(100 * 2 ** Math.min(failures, 6), 5000), signal);
    }
  }

  // session runs one stream until it closes: the idle room is granted as credit, and every
  // batch delivered goes to the handlers. Credit granted and not used is idle room again
  // after. It says whether anything was delivered.
  private async session(s: ReceiveStream): Promise<boolean> {
    this.stream = s;
    this.delivered = 0;
    const onStop = () => s.close();
    this.stop.signal.addEventListener('abort', onStop, { once: true });
    if (this.stop.signal.aborted) s.close();
    this.grant();
    const err = await s.ended;
    this.stop.signal.removeEventListener('abort', onStop);
    this.stream = undefined;
    this.idle += this.granted;
    this.granted = 0;
    this.unsent = 0;
    if (err && fatalCodes.has(err.code)) {
      this.fatal ??= err;
      this.halt();
    } else if (err && !this.stop.signal.aborted) {
      this.report('receive', undefined, err);
    }
    return this.delivered > 0;
  }

  // grant turns idle room into credit, up to what one stream may hold.
  private grant(): void {
    const n = Math.min(this.idle, MAX_STREAM_CREDIT - this.granted);
    if (n <= 0 || this.stop.signal.aborted) return;
    this.idle -= n;
    this.granted += n;
    this.unsent += n;
    if (this.creditQueued) return;
    this.creditQueued = true;
    queueMicrotask(() => {
      this.creditQueued = false;
      const n = this.unsent;
      this.unsent = 0;
      if (n > 0) this.stream?.credit(n);
    });
  }

  // batch takes a stream's batch: each message to a handler, or, once the consumer is
  // stopping, back to the queue at once.
  private batch(msgs: ReceivedMessage[]): void {
    this.granted -= msgs.length;
    this.delivered += msgs.length;
    if (this.stop.signal.aborted) {
      const ds = msgs.map((m) => ({ m, abandoned: true }));
      const p = this.releaseAll(ds).finally(() => this.release(msgs.length));
      this.settling.add(p);
      void p.finally(() => this.settling.delete(p));
      return;
    }
    const leased = Date.now();
    for (const m of msgs) this.start(m, leased);
  }

  private async poll(): Promise<void> {
    let failures = 0;
    const signal = this.stop.signal;
    while (!signal.aborted) {
      if (!(await this.acquire())) return;
      let n = 1;
      while (n < MAX_BATCH && this.idle > 0) {
        this.idle--;
        n++;
      }
      const leased = Date.now();
      let msgs: ReceivedMessage[];
      try {
        msgs = await this.client.receive(
          this.queue,
          { maxMessages: n, visibilityTimeoutSeconds: this.vt, waitSeconds: this.waitSeconds, filter: this.filter, consumerId: this.consumerId },
          { signal },
        );
      } catch (e) {
        this.release(n);
        if (signal.aborted) return;
        if (e instanceof QueuesError && fatalCodes.has(e.code)) {
          this.fatal ??= e;
          this.halt();
          return;
        }
        this.report('receive', undefined, e);
        failures++;
        await pause(Math.min(100 * 2 ** Math.min(failures, 6), 5000), signal);
        continue;
      }
      failures = 0;
      this.release(n - msgs.length);
      for (const m of msgs) this.start(m, leased);
    }
  }

  private start(m: ReceivedMessage, leased: number): void {
    const d: Delivery = { m, abandoned: false };
    this.inflight.add(d);
    const p = (async () => {
      const stopBeat = this.heartbeat(d, leased);
      let r: { value: unknown } | { error: unknown };
      try {
        r = {
          value: await withProcessSpan(this.queue, m, () => this.handler(m, { signal: this.hstop.signal }), outcomeOf),
        };
      } catch (error) {
        r = { error };
      }
      stopBeat();
      this.inflight.delete(d);
      if (!d.abandoned) {
        const s = this.settle(m, r);
        this.settling.add(s);
        await s;
        this.settling.delete(s);
      }
      this.release(1);
    })();
    this.handlers.add(p);
    void p.finally(() => this.handlers.delete(p));
  }

  // heartbeat extends d's visibility each time half the visibility timeout has passed.
  private heartbeat(d: Delivery, leased: number): () => void {
    const half = (this.vt * 1000) / 2;
    let stopped = false;
    let t: ReturnType<typeof setTimeout>;
    const handle = d.m.receiptHandle;
    // An at-most-once queue's message has no handle: it left the queue when received.
    if (handle === undefined) return () => {};
    const beat = async () => {
      if (stopped || this.hstop.signal.aborted) return;
      try {
        await this.client.changeVisibility(handle, this.vt, { signal: this.hstop.signal });
      } catch (e) {
        if (stopped || this.hstop.signal.aborted) return;
        this.report('heartbeat', d.m.messageId, e);
        if (isCode(e, 'receipt_handle_stale') || isCode(e, 'visibility_limit_exceeded') || isCode(e, 'receipt_handle_invalid')) {
          return;
        }
      }
      if (!stopped) t = setTimeout(beat, half);
    };
    t = setTimeout(beat, Math.max(0, leased + half - Date.now()));
    return () => {
      stopped = true;
      clearTimeout(t);
    };
  }

  private async settle(m: ReceivedMessage, r: { value: unknown } | { error: unknown }): Promise<void> {
    const { outcome, error } = outcomeOf(r);
    let delay = outcome.kind === 'retry' ? outcome.delaySeconds : 0;
    if (error !== undefined) {
      this.report('handler', m.messageId, error);
      if (this.o.errorRetryAfter) {
        try {
          delay = Math.max(0, Math.ceil(this.o.errorRetryAfter(m, error)));
        } catch {
          delay = 0;
        }
      }
    }
    // An at-most-once queue's message has no handle: whatever the outcome, nothing to settle.
    const handle = m.receiptHandle;
    if (handle === undefined) return;
    try {
      switch (outcome.kind) {
        case 'ack':
          this.queueAck(handle);
          return;
        case 'retry':
          if (await this.overStream('visibility', { receiptHandle: handle, visibilityTimeoutSeconds: delay })) return;
          await this.client.changeVisibility(handle, delay);
          return;
        case 'dead-letter':
          if (await this.overStream('deadLetter', outcome.reason ? { receiptHandle: handle, reason: outcome.reason } : { receiptHandle: handle })) {
            return;
          }
          await this.client.deadLetter(handle, outcome.reason);
          return;
        case 'cancel':
          await this.client.cancel(handle);
          return;
        case 'defer':
          return;
      }
    } catch (e) {
      this.report(outcome.kind, m.messageId, e);
    }
  }

  // overStream sends a single-form settlement on the open stream: true when the service
  // answered it (its error thrown), false when it must go over HTTP instead (no stream, the
  // stream closed first, or a rate limit, which HTTP's retries wait out).
  private async overStream(kind: 'visibility' | 'deadLetter', body: object): Promise<boolean> {
    const a = await this.streamCall(kind, body);
    if (a === undefined) return false;
    if (a.error) throw queuesError({ code: a.error.code, message: a.error.message, status: 0, details: a.error.details });
    return true;
  }

  private async streamCall(kind: 'ack' | 'visibility' | 'deadLetter', body: object): Promise<StreamAnswer | undefined> {
    const s = this.stream;
    if (!s?.open) return undefined;
    try {
      const a = await s.settle(kind, body);
      return a.error?.code === 'rate_limited' ? undefined : a;
    } catch {
      return undefined;
    }
  }

  // sendAcks acknowledges a batch over the stream while one is open, else (or when the stream
  // fails the call as a whole) over HTTP.
  private async sendAcks(batch: string[]): Promise<void> {
    const a = await this.streamCall('ack', { receiptHandles: batch });
    if (a === undefined) {
      (await this.client.ackBatch(batch)).forEach((e) => this.report('ack', undefined, e));
      return;
    }
    if (a.error) throw queuesError({ code: a.error.code, message: a.error.message, status: 0, details: a.error.details });
    for (const r of a.results ?? []) {
      if (r.error) this.report('ack', undefined, queuesError({ code: r.error.code, message: r.error.message, status: 0, details: r.error.details }));
    }
  }

  private queueAck(handle: string): void {
    this.acks.push(handle);
    if (this.acks.length >= this.ackBatch) {
      this.flush();
    } else if (this.ackTimer === undefined) {
      this.ackTimer = setTimeout(() => this.flush(), this.ackInterval);
    }
  }

  // flush sends the acknowledgements held, in batches.
  private flush(): void {
    clearTimeout(this.ackTimer);
    this.ackTimer = undefined;
    while (this.acks.length > 0) {
      const batch = this.acks.splice(0, this.ackBatch);
      const p = this.sendAcks(batch).catch((e) => this.report('ack', undefined, e));
      this.flushes.add(p);
      void p.finally(() => this.flushes.delete(p));
    }
  }

  // drain is the shutdown after the receives ended.
  private async drain(): Promise<void> {
    const timeout = this.o.shutdownTimeoutMs ?? 30000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<boolean>((r) => (timer = setTimeout(() => r(true), timeout)));
    const idle = Promise.all([...this.handlers]).then(() => false);
    if (await Promise.race([idle, expired])) await this.abandon();
    clearTimeout(timer);
    while (this.settling.size > 0) await Promise.all([...this.settling]);
    this.flush();
    while (this.flushes.size > 0) await Promise.all([...this.flushes]);
  }

  // abandon aborts the handlers still running and releases their messages.
  private async abandon(): Promise<void> {
    this.hstop.abort();
    const all = [...this.inflight];
    this.inflight.clear();
    for (const d of all) d.abandoned = true;
    await this.releaseAll(all);
  }

  // releaseAll makes the deliveries' messages visible again at once, in batches over HTTP.
  private async releaseAll(all: Delivery[]): Promise<void> {
    const ds = all.filter((d): d is Delivery & { m: { receiptHandle: string } } => d.m.receiptHandle !== undefined);
    for (let i = 0; i < ds.length; i += MAX_RECEIPT_BATCH) {
      const chunk = ds.slice(i, i + MAX_RECEIPT_BATCH);
      try {
        const errs = await this.client.changeVisibilityBatch(
          chunk.map((d) => ({ receiptHandle: d.m.receiptHandle, visibilityTimeoutSeconds: 0 })),
        );
        errs.forEach((e, j) => this.report('release', chunk[j]!.m.messageId, e));
      } catch (e) {
        this.report('release', undefined, e);
      }
    }
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
