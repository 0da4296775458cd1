// The topic stream (GET /v1/topics/{topic}/stream, docs/streaming.md "The topic stream"): a
// topic's log from a bookmark on, over a WebSocket, under credit. openTopicStream is one
// connection; topicStream iterates across reconnects, keeping the bookmark, as the Go SDK's
// Client.TopicStream does.
import { QueuesError, queuesError } from './errors.js';
import type * as api from './openapi.js';

/** Where a topic stream starts: `now` (default), `earliest`, a sequence, or a time. */
export type TopicStreamFrom = 'now' | 'earliest' | number | string | Date;

export interface TopicStreamOptions {
  /** `now` (default: the next entry published), `earliest`, a sequence (at most the log's last + 1), or an RFC 3339 time / Date. */
  from?: TopicStreamFrom;
  /** Only entries whose attributes match: name to a value or a list of values. */
  filter?: api.FilterAttributes;
  /** Keyed entries as RFC 7396 merge patches against the key's last version this stream delivered. */
  delta?: boolean;
  /** Most entries in one frame (1–1,000; default the service's 100). */
  maxMessages?: number;
  /** Credit topicStream keeps granted: entries that may be on their way (1–1,000; default 256). */
  window?: number;
  /** Ends the stream; the iteration throws the abort reason. */
  signal?: AbortSignal;
}

/** One entry a topic stream delivered (generated from openapi.yaml); with `delta`, `body` is a merge patch for `key`'s last body. */
export type StreamEntry = api.StreamEntry;

/**
 * Entries `from`…`firstSequence − 1` were trimmed from the log (its retention) before the
 * stream could deliver them; `from` is null when a time older than the log holds was asked.
 */
export type TopicGap = api.TopicStreamGap['gap'];

/** What a topic stream yields: an entry, or a gap before the entries that follow it. */
export type TopicEvent = { kind: 'entry'; entry: StreamEntry } | { kind: 'gap'; gap: TopicGap };

/** The part of a WebSocket (WHATWG, or the `ws` package's) the streams use. */
export interface Socket {
  readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, fn: (ev: any) => void): void; // eslint-disable-line @typescript-eslint/no-explicit-any
  on?(type: string, fn: (...args: any[]) => void): void; // eslint-disable-line @typescript-eslint/no-explicit-any
}
type SocketCtor = new (url: string, init: { headers: Record<string, string> }) => Socket;

let wsPackage: Promise<SocketCtor> | undefined;

/**
 * The WebSocket to use: the global one where the runtime has it (browsers, Node ≥ 22, Deno,
 * Bun, Workers), else the optional `ws` package, imported only then so other runtimes never
 * load it. A runtime's WebSocket that ignores the `headers` init (browsers) cannot send the
 * token: such a stream is refused (401) unless a proxy adds it.
 */
export function webSocketClass(): Promise<SocketCtor> {
  const g = (globalThis as unknown as { WebSocket?: SocketCtor }).WebSocket;
  if (g) return Promise.resolve(g);
  wsPackage ??= import('ws' as string).then(
    (m: { WebSocket?: SocketCtor; default?: SocketCtor }) => (m.WebSocket ?? m.default)!,
    (e: unknown) => {
      wsPackage = undefined;
      throw queuesError({
        code: 'unavailable',
        message: `queues: this runtime has no global WebSocket; install the optional dependency "ws" (${(e as Error).message})`,
        status: 0,
        cause: e,
      });
    },
  );
  return wsPackage;
}

/** The codes that end topicStream: the stream would fail the same way again. */
const FINAL = new Set(['not_found', 'unauthenticated', 'permission_denied', 'invalid_argument']);

/** The stream's URL: http(s) → ws(s), the query from o. */
export function topicStreamURL(base: string, topic: string, o: TopicStreamOptions): string {
  const u = new URL(`${base}/v1/topics/${encodeURIComponent(topic)}/stream`);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  const from = o.from instanceof Date ? o.from.toISOString() : o.from;
  if (from !== undefined && from !== 'now') u.searchParams.set('from', String(from));
  if (o.delta) u.searchParams.set('delta', 'true');
  if (o.maxMessages) u.searchParams.set('maxMessages', String(o.maxMessages));
  for (const [name, v] of Object.entries(o.filter ?? {})) {
    for (const one of Array.isArray(v) ? v : [v]) u.searchParams.append(`attribute.${name}`, one);
  }
  return u.toString();
}

/** One open topic stream: grant credit, take frames' events in order, close. */
export class TopicStreamConnection {
  readonly #ws: Socket;
  readonly #frames: TopicEvent[][] = [];
  #waiter: (() => void) | undefined;
  #ended = false;
  #error: QueuesError | undefined;

  /** @internal */
  constructor(ws: Socket) {
    this.#ws = ws;
    ws.addEventListener('message', (ev: { data: unknown }) => this.#frame(ev.data));
    ws.addEventListener('close', () => this.#end(undefined));
    ws.addEventListener('error', (ev: { message?: string; error?: Error }) =>
      this.#end(queuesError({ code: 'network', message: `queues: topic stream: ${ev.error?.message ?? ev.message ?? 'connection error'}`, status: 0 })),
    );
  }

  #frame(data: unknown): void {
    let f: { messages?: StreamEntry[]; gap?: TopicGap; error?: { code: string; message: string; details?: Record<string, unknown> } };
    try {
      f = JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data as ArrayBuffer));
    } catch (e) {
      return this.#fail(queuesError({ code: 'invalid_response', message: `queues: a topic stream frame: ${(e as Error).message}`, status: 0 }));
    }
    if (f.error) {
      const status = { not_found: 404, unauthenticated: 401, permission_denied: 403, invalid_argument: 400 }[f.error.code] ?? 0;
      return this.#fail(queuesError({ code: f.error.code, message: f.error.message, status, details: f.error.details }));
    }
    if (f.gap) this.#frames.push([{ kind: 'gap', gap: f.gap }]);
    else if (Array.isArray(f.messages)) this.#frames.push(f.messages.map((entry) => ({ kind: 'entry' as const, entry })));
    else return this.#fail(queuesError({ code: 'invalid_response', message: `queues: an unexpected topic stream frame: ${String(data).slice(0, 60)}`, status: 0 }));
    this.#wake();
  }

  #fail(err: QueuesError): void {
    this.#end(err);
    this.#ws.close();
  }

  #end(err: QueuesError | undefined): void {
    if (!this.#ended) {
      this.#ended = true;
      this.#error = err;
    }
    this.#wake();
  }

  #wake(): void {
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.();
  }

  /** Why the stream ended: undefined while it runs or after a clean close, else the error (a service error frame, a dropped connection). */
  get error(): QueuesError | undefined {
    return this.#error;
  }

  /** Whether the connection has ended (buffered frames may remain for next()). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Lets the service deliver n more entries (1–1,000; at most 1,000 held). */
  credit(n: number): void {
    if (this.#ended || this.#ws.readyState !== 1) return; // the end surfaces through next()
    this.#ws.send(JSON.stringify({ credit: n }));
  }

  /**
   * The next frame's events, waiting for one; once the stream has ended, the frames still
   * buffered, then undefined (see `error`).
   */
  async next(signal?: AbortSignal): Promise<TopicEvent[] | undefined> {
    for (;;) {
      const f = this.#frames.shift();
      if (f) return f;
      if (this.#ended) return undefined;
      if (signal?.aborted) throw signal.reason;
      await new Promise<void>((resolve) => {
        const onAbort = () => resolve();
        signal?.addEventListener('abort', onAbort, { once: true });
        this.#waiter = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
      });
    }
  }

  /** Ends the stream (close 1000). */
  close(): void {
    this.#end(undefined);
    if (this.#ws.readyState <= 1) this.#ws.close(1000);
  }
}

/**
 * Opens one topic stream: resolves once the WebSocket is open, rejects with the refusal's
 * QueuesError. The connection listens from the start: a frame that arrives with the upgrade's
 * answer (a gap is sent at once) is dispatched before the open resolves anyone.
 */
export function openTopicStreamAt(url: string, headers: Record<string, string>, signal?: AbortSignal): Promise<TopicStreamConnection> {
  return openWebSocket(url, headers, signal, 'the topic stream', (ws) => new TopicStreamConnection(ws));
}

/**
 * Opens a WebSocket to one of the service's streams: attach(ws) listens from the start (before
 * the open resolves), and the result is what attach made; a refused upgrade rejects with the
 * QueuesError of its answer. what names the stream in messages.
 */
export async function openWebSocket<T>(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal | undefined,
  what: string,
  attach: (ws: Socket) => T,
): Promise<T> {
  const WS = await webSocketClass();
  const ws = new WS(url, { headers });
  if ('binaryType' in ws) (ws as { binaryType: string }).binaryType = 'arraybuffer';
  const conn = attach(ws);
  return new Promise<T>((resolve, reject) => {
    let refused: QueuesError | undefined;
    const onAbort = () => {
      ws.close();
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    // The ws package shows a refused upgrade's answer; a WHATWG WebSocket only says it failed.
    ws.on?.('unexpected-response', (_req: unknown, res: AsyncIterable<Uint8Array> & { statusCode: number; headers: Record<string, string | undefined> }) => {
      void (async () => {
        let body = '';
        const dec = new TextDecoder();
        for await (const chunk of res) body += dec.decode(chunk, { stream: true });
        refused = refusal(res.statusCode, body, res.headers['retry-after']);
        ws.close();
        signal?.removeEventListener('abort', onAbort);
        reject(refused);
      })().catch(() => undefined);
    });
    ws.addEventListener('open', () => {
      signal?.removeEventListener('abort', onAbort);
      resolve(conn);
    });
    ws.addEventListener('error', (ev: { message?: string; error?: Error }) => {
      if (refused) return; // ws: the 'unexpected-response' above rejects with the answer
      signal?.removeEventListener('abort', onAbort);
      const failed = queuesError({ code: 'network', message: `queues: opening ${what}: ${ev.error?.message ?? ev.message ?? 'failed'}`, status: 0 });
      if (ws.on) return reject(failed);
      // A WHATWG WebSocket hides the refusal's status: ask the route without the upgrade.
      probe(url, headers, signal).then((e) => reject(e ?? failed), () => reject(failed));
    });
  });
}

/**
 * The error the stream's route answers a plain GET with, but for the one every healthy
 * stream gets (400 naming `Upgrade`): authentication, scope and rate refusals.
 */
async function probe(url: string, headers: Record<string, string>, signal?: AbortSignal): Promise<QueuesError | undefined> {
  const res = await fetch(url.replace(/^ws/, 'http'), { headers, signal: signal ?? null });
  const body = await res.text();
  if (res.ok) return undefined;
  const e = refusal(res.status, body, res.headers.get('retry-after') ?? undefined);
  return e.field === 'Upgrade' ? undefined : e;
}

/** The QueuesError of a refused upgrade's answer. */
function refusal(status: number, body: string, retryAfter: string | undefined): QueuesError {
  let e: { code?: string; message?: string; details?: Record<string, unknown> } = {};
  try {
    e = (JSON.parse(body) as { error?: typeof e }).error ?? {};
  } catch {
    // not JSON: a proxy's page; the status says enough
  }
  const code = e.code ?? ({ 400: 'invalid_argument', 401: 'unauthenticated', 403: 'permission_denied', 404: 'not_found', 429: 'rate_limited' }[status] ?? 'unavailable');
  const ra = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) : undefined;
  return queuesError({ code, message: e.message ?? `HTTP ${status}`, status, details: e.details, retryAfter: ra });
}

/** What topicStream needs of the client. */
export interface StreamHost {
  url: string;
  headers(): Promise<Record<string, string>>;
  lastSequence(topic: string, signal?: AbortSignal): Promise<number | undefined>;
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The entries and gaps of a topic from `from` on, across reconnects (QueuesClient.topicStream):
 * an async iterator, with the bookmark a reconnect starts from.
 */
export class TopicStream implements AsyncIterableIterator<TopicEvent> {
  readonly #o: TopicStreamOptions;
  readonly #gen: AsyncGenerator<TopicEvent>;

  /** @internal */
  constructor(host: StreamHost, topic: string, opts: TopicStreamOptions) {
    this.#o = { ...opts };
    this.#gen = run(host, topic, this.#o);
  }

  /**
   * Where a reconnect starts: the sequence after the last entry yielded (or a gap's
   * `firstSequence`); before the first, the asked `from` — `now` is made a sequence (the
   * topic's `lastSequence` + 1) when the iteration starts, if the token can read the topic.
   */
  get bookmark(): TopicStreamFrom | undefined {
    return this.#o.from;
  }

  next(): Promise<IteratorResult<TopicEvent>> {
    return this.#gen.next();
  }

  /** Ends the stream (what `break` out of `for await` calls). */
  return(value?: unknown): Promise<IteratorResult<TopicEvent>> {
    return this.#gen.return(value);
  }

  throw(e?: unknown): Promise<IteratorResult<TopicEvent>> {
    return this.#gen.throw(e);
  }

  [Symbol.asyncIterator](): TopicStream {
    return this;
  }
}

async function* run(host: StreamHost, topic: string, o: TopicStreamOptions): AsyncGenerator<TopicEvent> {
  const window = o.window && o.window > 0 && o.window <= 1000 ? o.window : 256;
  if (o.from === undefined || o.from === 'now') {
    // A bookmark from the start, so a reconnect before the first entry misses nothing.
    const last = await host.lastSequence(topic, o.signal);
    if (last !== undefined) o.from = last + 1;
  }
  let failures = 0;
  for (;;) {
    let err: QueuesError | undefined;
    try {
      const s = await openTopicStreamAt(topicStreamURL(host.url, topic, o), await host.headers(), o.signal);
      try {
        s.credit(window);
        let used = 0;
        for (;;) {
          const evs = await s.next(o.signal);
          if (!evs) break;
          for (const ev of evs) {
            if (ev.kind === 'entry') {
              o.from = ev.entry.sequence + 1;
              used++;
              failures = 0;
            } else {
              o.from = ev.gap.firstSequence;
            }
            yield ev;
          }
          if (used >= Math.max(window >> 1, 1)) {
            s.credit(used);
            used = 0;
          }
        }
        err = s.error;
      } finally {
        s.close();
      }
    } catch (e) {
      if (o.signal?.aborted) throw o.signal.reason;
      if (!(e instanceof QueuesError)) throw e;
      err = e;
    }
    if (err && FINAL.has(err.code)) throw err;
    failures++;
    const wait = Math.max(Math.min(100 * 2 ** Math.min(failures, 6), 5000), (err?.retryAfter ?? 0) * 1000);
    await pause(wait, o.signal);
  }
}
