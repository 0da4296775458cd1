// The receive stream (GET /v1/queues/{queue}/stream, docs/streaming.md): batches delivered
// against credit over a WebSocket, and settlement frames answered on the same connection.
// The consumer uses it; one connection is a ReceiveStream.
import { queuesError, type QueuesError } from './errors.js';
import type * as api from './openapi.js';
import { openWebSocket, type Socket } from './topicstream.js';

/** The most credit the service holds for one stream. */
export const MAX_STREAM_CREDIT = 1000;

/** A settlement frame's kind: the receipt route whose body it carries. */
export type SettlementKind = 'ack' | 'visibility' | 'deadLetter';

/** The service's answer to a settlement frame. */
export interface StreamAnswer {
  results?: api.BatchResult[];
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

interface Pending {
  resolve(a: StreamAnswer): void;
  reject(e: QueuesError): void;
}

/** The receive stream's URL: http(s) → ws(s), with the consumer's visibility timeout, filter and consumerId. */
export function receiveStreamURL(base: string, queue: string, vt: number, filter: api.AttributeFilter | undefined, consumerId?: string): string {
  const u = new URL(`${base}/v1/queues/${encodeURIComponent(queue)}/stream`);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.searchParams.set('visibilityTimeoutSeconds', String(vt));
  for (const [name, v] of Object.entries(filter?.attributes ?? {})) {
    for (const one of Array.isArray(v) ? v : [v]) u.searchParams.append(`attribute.${name}`, one);
  }
  if (consumerId !== undefined) u.searchParams.set('consumerId', consumerId);
  return u.toString();
}

/** The status an error frame's code has, for the QueuesError it becomes. */
const statusOf: Record<string, number> = { not_found: 404, unauthenticated: 401, permission_denied: 403, invalid_argument: 400, rate_limited: 429 };

/**
 * One open receive stream. Batches go to onMessages as they arrive, until the connection
 * closes; `ended` resolves then, with the stream's error frame (or a dropped connection's
 * error), or undefined after a clean close.
 */
export class ReceiveStream {
  readonly #ws: Socket;
  readonly #pending = new Map<string, Pending>();
  #next = 0;
  #closed = false;
  #error: QueuesError | undefined;
  #onEnd!: (e: QueuesError | undefined) => void;
  /** Resolves when the connection has closed: no batch is delivered after it. */
  readonly ended: Promise<QueuesError | undefined> = new Promise((r) => (this.#onEnd = r));

  /** @internal */
  constructor(
    ws: Socket,
    private readonly onMessages: (msgs: api.ReceivedMessage[]) => void,
  ) {
    this.#ws = ws;
    ws.addEventListener('message', (ev: { data: unknown }) => this.#frame(ev.data));
    ws.addEventListener('close', () => this.#end());
    ws.addEventListener('error', (ev: { message?: string; error?: Error }) => {
      this.#error ??= queuesError({ code: 'network', message: `queues: receive stream: ${ev.error?.message ?? ev.message ?? 'connection error'}`, status: 0 });
    });
  }

  /** Opens a receive stream; rejects with the refused upgrade's QueuesError. */
  static open(url: string, headers: Record<string, string>, onMessages: (msgs: api.ReceivedMessage[]) => void, signal?: AbortSignal): Promise<ReceiveStream> {
    return openWebSocket(url, headers, signal, 'the receive stream', (ws) => new ReceiveStream(ws, onMessages));
  }

  #frame(data: unknown): void {
    let f: { messages?: api.ReceivedMessage[]; id?: string; results?: api.BatchResult[]; error?: StreamAnswer['error'] };
    try {
      f = JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data as ArrayBuffer));
    } catch (e) {
      return this.#fail(queuesError({ code: 'invalid_response', message: `queues: a receive stream frame: ${(e as Error).message}`, status: 0 }));
    }
    if (Array.isArray(f.messages)) return this.onMessages(f.messages);
    if (typeof f.id === 'string') {
      const p = this.#pending.get(f.id);
      this.#pending.delete(f.id);
      p?.resolve({ results: f.results, error: f.error });
      return;
    }
    if (f.error) {
      const e = f.error;
      return this.#fail(queuesError({ code: e.code, message: e.message, status: statusOf[e.code] ?? 0, details: e.details }));
    }
    this.#fail(queuesError({ code: 'invalid_response', message: `queues: an unexpected receive stream frame: ${String(data).slice(0, 60)}`, status: 0 }));
  }

  #fail(err: QueuesError): void {
    this.#error ??= err;
    this.close();
  }

  #end(): void {
    if (this.#closed) return;
    this.#closed = true;
    const gone = this.#error ?? queuesError({ code: 'network', message: 'queues: the receive stream closed', status: 0 });
    for (const p of this.#pending.values()) p.reject(gone);
    this.#pending.clear();
    this.#onEnd(this.#error);
  }

  /** Whether settlement frames can still be sent. */
  get open(): boolean {
    return !this.#closed && this.#ws.readyState === 1;
  }

  /** Lets the service deliver n more messages (1–1,000; at most 1,000 held). */
  credit(n: number): void {
    if (this.open) this.#ws.send(`{"credit":${n}}`);
  }

  /**
   * Sends a settlement frame carrying body (the receipt route's); resolves with the answer,
   * rejects when the stream closes first (the handles are as good over HTTP then).
   */
  settle(kind: SettlementKind, body: unknown): Promise<StreamAnswer> {
    if (!this.open) return Promise.reject(queuesError({ code: 'network', message: 'queues: the receive stream is closed', status: 0 }));
    const id = String(++this.#next);
    return new Promise<StreamAnswer>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#ws.send(`{"id":"${id}","${kind}":${JSON.stringify(body)}}`);
    });
  }

  /** Ends the stream (close 1000); `ended` resolves once the service's close arrives. */
  close(): void {
    if (this.#ws.readyState <= 1) this.#ws.close(1000);
  }
}
