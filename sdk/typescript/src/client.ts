import { consume, type ConsumeOptions, type Handler } from './consumer.js';
import { QueuesError, errorFromResponse, queuesError } from './errors.js';
import { DEFAULT_URL } from './limits.js';
import type * as api from './openapi.js';
import type { ProjectDetail, SQSCredentials, UpdateProjectRequest, UsageQuery, UsageReport } from './project.js';
import { routes, type RouteName } from './routes.js';
import type { BindRequest } from './topics.js';
import { injectTraceparent } from './tracing.js';
import { userAgent } from './version.js';
import { TopicStream, openTopicStreamAt, topicStreamURL, type TopicStreamConnection, type TopicStreamOptions } from './topicstream.js';

export { DEFAULT_URL, MAX_BATCH, MAX_RECEIPT_BATCH } from './limits.js';

/**
 * How calls answered `429 rate_limited` or `503 unavailable` are retried. Other errors
 * (`429 purge_too_soon` included) are thrown at once. A GET that fails to connect is retried
 * too; other requests are not, since the server may have acted on them.
 */
export interface RetryPolicy {
  /** Every attempt, the first included (default 4; 1 disables retries). */
  maxAttempts?: number;
  /** The first backoff (default 100 ms); it doubles per attempt, with jitter. */
  minBackoffMs?: number;
  /** Caps one backoff (default 5 s). */
  maxBackoffMs?: number;
  /** The longest Retry-After waited for (default 30 s); a longer one is thrown instead. */
  maxRetryAfterMs?: number;
}

export interface ClientOptions {
  /** The service's base URL (default `$QUEUES_URL`, else http://127.0.0.1:8080). */
  url?: string;
  /** A project token, or the operator credential for operator routes (default `$QUEUES_TOKEN`). */
  token?: string;
  retry?: RetryPolicy;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
  /**
   * The application's product token (`myapp/1.2`), sent before the SDK's own:
   * `User-Agent: myapp/1.2 queues-typescript/<version>`. Browsers send their own User-Agent
   * whatever a fetch asks; there the SDK sends nothing else (docs/sdk-typescript.md).
   */
  userAgent?: string;
}

/** Options of one call. */
export interface CallOptions {
  /** Aborts the call (and any wait before a retry). */
  signal?: AbortSignal;
}

export interface PageOptions extends CallOptions {
  limit?: number;
  cursor?: string | null;
}

export interface ListQueuesOptions extends PageOptions {
  /** Only queues whose name starts with this. */
  prefix?: string;
}

export interface BrowseOptions extends PageOptions {
  state?: api.MessageState;
  /**
   * Only messages whose attributes match (docs/delivery-options.md#filtered-receive-and-browse): name to a value or a list of values,
   * any of which matches; every name must match. Sent as `attribute.<name>=<value>`.
   */
  filter?: api.FilterAttributes;
}

/** The query form of a browse filter: attribute.<name>, once per value. */
function filterQuery(f: api.FilterAttributes | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, v] of Object.entries(f ?? {})) out[`attribute.${name}`] = Array.isArray(v) ? v : [v];
  return out;
}

export interface ListTopicsOptions extends PageOptions {
  /** Only topics whose name starts with this. */
  prefix?: string;
}

export interface ReadLogOptions extends PageOptions {
  /** The first entry: a sequence, or an RFC 3339 time (default the oldest held). */
  from?: number | string | Date;
  /** The last entry (inclusive): a sequence or a time (default the last). */
  to?: number | string | Date;
  /** Only entries whose attributes match, as a browse's filter. */
  filter?: api.FilterAttributes;
}

/** A position in a topic's log as the query or body carries it. */
function position(v: number | string | Date | undefined): string | undefined {
  return v instanceof Date ? v.toISOString() : v === undefined ? undefined : String(v);
}

/** The error of a failed entry of a 200 answer (send, publish), with the status its code has. */
function failedEntryError(e: { code: string; message: string; details?: Record<string, unknown> | undefined }): QueuesError {
  const status = e.code === 'payload_too_large' ? 413 : e.code === 'quota_exceeded' ? 403 : 400;
  return queuesError({ code: e.code, message: e.message, status, details: e.details });
}

/** Attempts are listed newest first; `cursor` pages to older ones where the server keeps them. */
/** A replay's request: `from` and `to` are sequences, RFC 3339 strings or Dates. */
export interface ReplayRequest extends Omit<api.StartReplayRequest, 'from' | 'to'> {
  from: number | string | Date;
  to?: number | string | Date;
}

export type AttemptsOptions = PageOptions;

/** A batch receipt call's per-entry outcome: undefined for success, else the entry's error. */
export type EntryErrors = (QueuesError | undefined)[];

/** The parts of one call of a route: path parameters, query, JSON body, abort signal. */
export interface RouteCall {
  path?: Record<string, string>;
  query?: Record<string, string | number | string[] | undefined | null>;
  body?: unknown;
  signal?: AbortSignal | undefined;
}

function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.[name] || undefined;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The items of every page a list route answers, following `nextCursor` until it is null:
 * page(cursor) fetches one page, items(page) takes its items. Lazy: a page is fetched when
 * the items before it have been taken, so breaking out of the loop fetches no more.
 */
async function* paginate<P extends { nextCursor?: string | null }, T>(
  page: (cursor: string | null) => Promise<P>,
  items: (p: P) => readonly T[],
): AsyncGenerator<T> {
  let cursor: string | null = null;
  do {
    const p: P = await page(cursor);
    yield* items(p);
    cursor = p.nextCursor ?? null;
  } while (cursor);
}

/** The options of an iterator over a list: a page's options but the cursor, which it keeps itself. */
export type IterOptions<O extends PageOptions = PageOptions> = Omit<O, 'cursor'>;

function time(v: string | Date | undefined): string | undefined {
  return v instanceof Date ? v.toISOString() : v;
}

function entryErrors(r: api.BatchResults | undefined, n: number): EntryErrors {
  const out: EntryErrors = new Array(n).fill(undefined);
  for (const e of r?.results ?? []) {
    if (e.error) {
      out[e.index] = queuesError({
        code: e.error.code,
        message: e.error.message,
        status: 0,
        details: e.error.details,
      });
    }
  }
  return out;
}

/**
 * A client of the Queues HTTP API. One instance is safe to share; it keeps no state between
 * calls besides its settings.
 */
export class QueuesClient {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #retry: Required<RetryPolicy>;
  readonly #userAgent: string;
  readonly #app: string | undefined;

  constructor(opts: ClientOptions = {}) {
    const url = (opts.url ?? env('QUEUES_URL') ?? DEFAULT_URL).replace(/\/+$/, '');
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      throw new TypeError(`queues: bad URL ${url}: want http(s)://host[:port]`);
    }
    this.url = url;
    this.#token = opts.token ?? env('QUEUES_TOKEN');
    this.#fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.#retry = {
      maxAttempts: opts.retry?.maxAttempts ?? 4,
      minBackoffMs: opts.retry?.minBackoffMs ?? 100,
      maxBackoffMs: opts.retry?.maxBackoffMs ?? 5000,
      maxRetryAfterMs: opts.retry?.maxRetryAfterMs ?? 30000,
    };
    this.#app = opts.userAgent;
    this.#userAgent = userAgent(opts.userAgent);
  }

  /** A client like this one presenting another token. */
  withToken(token: string): QueuesClient {
    return new QueuesClient({
      url: this.url,
      token,
      retry: this.#retry,
      fetch: this.#fetch,
      userAgent: this.#app,
    });
  }

  /** Calls one route; the typed methods below are built on it. */
  async call<T>(route: RouteName, req: RouteCall = {}): Promise<T> {
    const { method, path } = routes[route];
    let u = this.url + path.replace(/\{(\w+)\}/g, (_, k: string) => {
      const v = req.path?.[k];
      if (v === undefined || v === '') throw new TypeError(`queues: ${route} needs ${k}`);
      return encodeURIComponent(v);
    });
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (Array.isArray(v)) for (const one of v) q.append(k, one);
      else if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    }
    if (q.size > 0) u += `?${q}`;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.#userAgent };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let body: string | undefined;
    if (req.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(req.body);
    }
    await injectTraceparent(headers);
    for (let attempt = 1; ; attempt++) {
      let err: QueuesError;
      try {
        const res = await this.#fetch(u, { method, headers, body, signal: req.signal ?? null });
        if (res.ok) {
          const text = await res.text();
          return (text === '' ? undefined : JSON.parse(text)) as T;
        }
        err = await errorFromResponse(res);
      } catch (e) {
        if (req.signal?.aborted) throw req.signal.reason;
        if (e instanceof SyntaxError) {
          throw queuesError({ code: 'invalid_response', message: `${method} ${path}: ${e.message}`, status: 0, cause: e });
        }
        err = queuesError({ code: 'network', message: `${method} ${path}: ${(e as Error).message}`, status: 0, cause: e });
      }
      const wait = this.#retryWait(method, attempt, err);
      if (wait === undefined) throw err;
      await sleep(wait, req.signal);
    }
  }

  // retryWait says how long to wait before trying again after err, or undefined for not.
  #retryWait(method: string, attempt: number, err: QueuesError): number | undefined {
    const p = this.#retry;
    if (attempt >= p.maxAttempts) return undefined;
    if (err.code === 'network') {
      if (method !== 'GET') return undefined;
    } else if (err.code !== 'rate_limited' && err.code !== 'unavailable') {
      return undefined;
    }
    const after = (err.retryAfter ?? 0) * 1000;
    if (after > p.maxRetryAfterMs) return undefined;
    const backoff = Math.min(p.minBackoffMs * 2 ** (attempt - 1), p.maxBackoffMs);
    // Jitter in [backoff/2, backoff], so clients told to wait do not come back together.
    return Math.max(backoff / 2 + Math.random() * (backoff / 2), after);
  }

  // ---- projects and tokens (operator credential) ----

  /** Creates a project (operator). */
  createProject(req: api.CreateProjectRequest | string, o: CallOptions = {}): Promise<api.Project> {
    const body = typeof req === 'string' ? { name: req } : req;
    return this.call('createProject', { body, signal: o.signal });
  }

  /** Lists projects, one page (operator). */
  listProjects(o: PageOptions = {}): Promise<api.ProjectList> {
    return this.call('listProjects', { query: { limit: o.limit, cursor: o.cursor }, signal: o.signal });
  }

  /** Every project (operator credential), page by page: `for await (const p of client.allProjects())`. */
  allProjects(o: IterOptions = {}): AsyncGenerator<api.Project> {
    return paginate((cursor) => this.listProjects({ ...o, cursor }), (p) => p.projects);
  }

  /** A project with its limits and usage (operator). */
  getProject(project: string, o: CallOptions = {}): Promise<ProjectDetail> {
    return this.call('getProject', { path: { project }, signal: o.signal });
  }

  /** Sets any subset of a project's limits; null returns one to the default (operator). */
  updateProject(project: string, req: UpdateProjectRequest, o: CallOptions = {}): Promise<ProjectDetail> {
    return this.call('updateProject', { path: { project }, body: req, signal: o.signal });
  }

  /** A project's hourly metered counters (operator). */
  getProjectUsage(project: string, q: UsageQuery & CallOptions = {}): Promise<UsageReport> {
    return this.call('getProjectUsage', {
      path: { project },
      query: { from: time(q.from), to: time(q.to) },
      signal: q.signal,
    });
  }

  /** The token's own project with its limits and usage (a project token, any scope). */
  getCurrentProject(o: CallOptions = {}): Promise<ProjectDetail> {
    return this.call('getCurrentProject', { signal: o.signal });
  }

  /** The token's own project's hourly metered counters. */
  getCurrentProjectUsage(q: UsageQuery & CallOptions = {}): Promise<UsageReport> {
    return this.call('getCurrentProjectUsage', { query: { from: time(q.from), to: time(q.to) }, signal: q.signal });
  }

  /** Issues a project token (operator); its `token` is shown only here. */
  createToken(project: string, req: api.CreateTokenRequest, o: CallOptions = {}): Promise<api.TokenCreated> {
    return this.call('createToken', { path: { project }, body: req, signal: o.signal });
  }

  /** Revokes a token (operator); it stops working within 5 s everywhere. */
  async revokeToken(project: string, token: string, o: CallOptions = {}): Promise<void> {
    await this.call('revokeToken', { path: { project, token }, signal: o.signal });
  }

  /** The token's key pair for the SQS-compatible endpoint (operator); it can be shown again. */
  getSQSCredentials(project: string, token: string, o: CallOptions = {}): Promise<SQSCredentials> {
    return this.call('getSQSCredentials', { path: { project, token }, signal: o.signal });
  }

  // ---- queues ----

  createQueue(req: api.CreateQueueRequest, o: CallOptions = {}): Promise<api.Queue> {
    return this.call('createQueue', { body: req, signal: o.signal });
  }

  /** One page of the project's queues. */
  listQueues(o: ListQueuesOptions = {}): Promise<api.QueueList> {
    return this.call('listQueues', {
      query: { limit: o.limit, cursor: o.cursor, prefix: o.prefix },
      signal: o.signal,
    });
  }

  /** Every queue of the project, page by page. */
  allQueues(o: IterOptions<ListQueuesOptions> = {}): AsyncGenerator<api.Queue> {
    return paginate((cursor) => this.listQueues({ ...o, cursor }), (p) => p.queues);
  }

  /** A queue (by id, slug or name) with its settings, counts and partitions. */
  getQueue(queue: string, o: CallOptions = {}): Promise<api.Queue> {
    return this.call('getQueue', { path: { queue }, signal: o.signal });
  }

  updateQueue(queue: string, req: api.UpdateQueueRequest, o: CallOptions = {}): Promise<api.Queue> {
    return this.call('updateQueue', { path: { queue }, body: req, signal: o.signal });
  }

  async deleteQueue(queue: string, o: CallOptions = {}): Promise<void> {
    await this.call('deleteQueue', { path: { queue }, signal: o.signal });
  }

  /** Removes every message sent before now (once per 60 s per queue). */
  purgeQueue(queue: string, o: CallOptions = {}): Promise<api.PurgeResult> {
    return this.call('purgeQueue', { path: { queue }, signal: o.signal });
  }

  // ---- messages ----

  /** Sends 1–10 messages; each one's problem is reported in `failed`, not thrown. */
  sendMessages(queue: string, messages: api.SendMessageEntry[], o: CallOptions = {}): Promise<api.SendResult> {
    return this.call('sendMessages', { path: { queue }, body: { messages }, signal: o.signal });
  }

  /** Sends one message; a problem with it is thrown as a QueuesError. */
  async send(queue: string, message: string | api.SendMessageEntry, o: CallOptions = {}): Promise<api.SentMessage> {
    const m = typeof message === 'string' ? { body: message } : message;
    const r = await this.sendMessages(queue, [m], o);
    const f = r.failed[0];
    // The answer was 200 with this message in `failed`; status is what the same problem
    // answers when it fails a whole request.
    if (f) throw failedEntryError(f.error);
    return r.messages[0]!;
  }

  /** Receives (leases) up to `maxMessages` messages, long-polling up to `waitSeconds`. */
  receiveMessages(queue: string, req: api.ReceiveRequest = {}, o: CallOptions = {}): Promise<api.ReceiveResult> {
    return this.call('receiveMessages', { path: { queue }, body: req, signal: o.signal });
  }

  /** Like receiveMessages, answering the messages. */
  async receive(queue: string, req: api.ReceiveRequest = {}, o: CallOptions = {}): Promise<api.ReceivedMessage[]> {
    return (await this.receiveMessages(queue, req, o)).messages;
  }

  /** Lists messages without leasing them (no receipt handles). */
  browseMessages(queue: string, o: BrowseOptions = {}): Promise<api.BrowseResult> {
    return this.call('browseMessages', {
      path: { queue },
      query: { state: o.state, limit: o.limit, cursor: o.cursor, ...filterQuery(o.filter) },
      signal: o.signal,
    });
  }

  /** Every message browse finds (state and filter as browseMessages), page by page. */
  browseAll(queue: string, o: IterOptions<BrowseOptions> = {}): AsyncGenerator<api.BrowsedMessage> {
    return paginate((cursor) => this.browseMessages(queue, { ...o, cursor }), (p) => p.messages);
  }

  /**
   * Deletes one visible or delayed message by the id its send answered: `message_in_flight`
   * (409) while a consumer holds it, `not_found` (404) when the queue does not hold it.
   */
  async deleteMessage(queue: string, messageId: string, o: CallOptions = {}): Promise<void> {
    await this.call('deleteMessage', { path: { queue, messageId }, signal: o.signal });
  }

  // ---- consumers (docs/delivery-options.md#consumers-backlogs-and-fairness) ----

  /** Lists the consumers that named themselves on a receive in the last 5 minutes. */
  listConsumers(queue: string, o: PageOptions = {}): Promise<api.ConsumerList> {
    return this.call('listConsumers', { path: { queue }, query: { limit: o.limit, cursor: o.cursor }, signal: o.signal });
  }

  /** Every consumer seen on the queue in the last 5 minutes, page by page. */
  allConsumers(queue: string, o: IterOptions = {}): AsyncGenerator<api.Consumer> {
    return paginate((cursor) => this.listConsumers(queue, { ...o, cursor }), (p) => p.consumers);
  }

  // ---- groups (fifo) ----

  /** One page of a fifo queue's message groups; `state` lists only the `active` or `parked` ones. */
  listGroups(queue: string, o: PageOptions & { state?: api.GroupState } = {}): Promise<api.GroupList> {
    return this.call('listGroups', {
      path: { queue },
      query: { limit: o.limit, cursor: o.cursor, state: o.state },
      signal: o.signal,
    });
  }

  /** Every message group of a fifo queue (in `state`, when given), page by page. */
  allGroups(queue: string, o: IterOptions & { state?: api.GroupState } = {}): AsyncGenerator<api.Group> {
    return paginate((cursor) => this.listGroups(queue, { ...o, cursor }), (p) => p.groups);
  }

  /**
   * Releases a fifo group a poison policy (`onDeadLetter`) parked: its messages are delivered
   * again from its head (docs/fifo.md). `group_not_parked` (409) when it is not parked.
   */
  async releaseGroup(queue: string, groupId: string, o: CallOptions = {}): Promise<void> {
    await this.call('releaseGroup', { path: { queue, groupId }, signal: o.signal });
  }

  /** Purges one message group of a fifo queue. */
  async deleteGroup(queue: string, groupId: string, o: CallOptions = {}): Promise<void> {
    await this.call('deleteGroup', { path: { queue, groupId }, signal: o.signal });
  }

  // ---- move tasks (redrive and replay, docs/redrive.md) ----

  /**
   * Starts a move task of queue (scope `queues:admin`): its matching messages move to
   * `destination`, or without one each back to its dead-letter source queue; with
   * `action: 'delete'` they are deleted instead (no `destination`; `moved` counts them). With
   * `dryRun` it only counts. One running task per queue: `move_task_running` (409).
   */
  startMoveTask(queue: string, req: api.StartMoveTaskRequest = {}, o: CallOptions = {}): Promise<api.MoveTask> {
    return this.call('startMoveTask', { path: { queue }, body: req, signal: o.signal });
  }

  /** One page of queue's move tasks, newest first (scope `queues:read`). */
  listMoveTasks(queue: string, o: PageOptions = {}): Promise<api.MoveTaskList> {
    return this.call('listMoveTasks', { path: { queue }, query: { limit: o.limit, cursor: o.cursor }, signal: o.signal });
  }

  /** Every move task of the queue, page by page. */
  allMoveTasks(queue: string, o: IterOptions = {}): AsyncGenerator<api.MoveTask> {
    return paginate((cursor) => this.listMoveTasks(queue, { ...o, cursor }), (p) => p.moveTasks);
  }

  /** One move task with its progress (scope `queues:read`). */
  getMoveTask(queue: string, task: string, o: CallOptions = {}): Promise<api.MoveTask> {
    return this.call('getMoveTask', { path: { queue, task }, signal: o.signal });
  }

  /** Stops a running move task (scope `queues:admin`); a finished one is answered unchanged. */
  cancelMoveTask(queue: string, task: string, o: CallOptions = {}): Promise<api.MoveTask> {
    return this.call('cancelMoveTask', { path: { queue, task }, signal: o.signal });
  }

  // ---- receipts (no credential: the handle is one) ----

  /** Acknowledges (deletes) one delivery. */
  async ack(receiptHandle: string, o: CallOptions = {}): Promise<void> {
    await this.call('ackReceipts', { body: { receiptHandle }, signal: o.signal });
  }

  /** Acknowledges 1–100 deliveries; answers each one's error by index. */
  async ackBatch(receiptHandles: string[], o: CallOptions = {}): Promise<EntryErrors> {
    const r = await this.call<api.BatchResults>('ackReceipts', { body: { receiptHandles }, signal: o.signal });
    return entryErrors(r, receiptHandles.length);
  }

  /**
   * Returns one delivery's message without counting the delivery: visible again at once, its
   * receiveCount one lower; the cancel beyond the queue's maxCancels dead-letters it.
   */
  async cancel(receiptHandle: string, o: CallOptions = {}): Promise<void> {
    await this.call('cancelReceipts', { body: { receiptHandle }, signal: o.signal });
  }

  /** cancel for 1–100 deliveries; answers each one's error by index. */
  async cancelBatch(receiptHandles: string[], o: CallOptions = {}): Promise<EntryErrors> {
    const r = await this.call<api.BatchResults>('cancelReceipts', { body: { receiptHandles }, signal: o.signal });
    return entryErrors(r, receiptHandles.length);
  }

  /** Sets one delivery's deadline to now + seconds (0 releases it; d retries after d). */
  async changeVisibility(receiptHandle: string, visibilityTimeoutSeconds: number, o: CallOptions = {}): Promise<void> {
    await this.call('changeVisibility', { body: { receiptHandle, visibilityTimeoutSeconds }, signal: o.signal });
  }

  /** changeVisibility for 1–100 deliveries; answers each one's error by index. */
  async changeVisibilityBatch(
    entries: { receiptHandle: string; visibilityTimeoutSeconds: number }[],
    o: CallOptions = {},
  ): Promise<EntryErrors> {
    const r = await this.call<api.BatchResults>('changeVisibility', { body: { entries }, signal: o.signal });
    return entryErrors(r, entries.length);
  }

  /** Moves one delivery's message to the dead-letter queue now (reason default "consumer"). */
  async deadLetter(receiptHandle: string, reason?: string, o: CallOptions = {}): Promise<void> {
    const body = reason ? { receiptHandle, reason } : { receiptHandle };
    await this.call('deadLetterReceipts', { body, signal: o.signal });
  }

  /** deadLetter for 1–100 deliveries; answers each one's error by index. */
  async deadLetterBatch(entries: { receiptHandle: string; reason?: string }[], o: CallOptions = {}): Promise<EntryErrors> {
    const r = await this.call<api.BatchResults>('deadLetterReceipts', { body: { entries }, signal: o.signal });
    return entryErrors(r, entries.length);
  }

  // ---- subscriptions ----

  /** Creates the queue's push subscription; the answer carries its signing secret, once. */
  createSubscription(
    queue: string,
    req: api.CreateSubscriptionRequest,
    o: CallOptions = {},
  ): Promise<api.SubscriptionWithSecret> {
    return this.call('createSubscription', { path: { queue }, body: req, signal: o.signal });
  }

  getSubscription(queue: string, o: CallOptions = {}): Promise<api.Subscription> {
    return this.call('getSubscription', { path: { queue }, signal: o.signal });
  }

  /** Changes any subset of the settings (pause and resume with `paused`). */
  updateSubscription(queue: string, req: api.UpdateSubscriptionRequest, o: CallOptions = {}): Promise<api.Subscription> {
    return this.call('updateSubscription', { path: { queue }, body: req, signal: o.signal });
  }

  async deleteSubscription(queue: string, o: CallOptions = {}): Promise<void> {
    await this.call('deleteSubscription', { path: { queue }, signal: o.signal });
  }

  /** A new signing secret; the previous one keeps signing alongside for 24 h. */
  rotateSubscriptionSecret(queue: string, o: CallOptions = {}): Promise<api.SubscriptionWithSecret> {
    return this.call('rotateSubscriptionSecret', { path: { queue }, signal: o.signal });
  }

  /** Recent push attempts, newest first. */
  listSubscriptionAttempts(queue: string, o: AttemptsOptions = {}): Promise<api.PushAttemptList> {
    return this.call('listSubscriptionAttempts', {
      path: { queue },
      query: { limit: o.limit, cursor: o.cursor },
      signal: o.signal,
    });
  }

  /** Every push attempt the service keeps for the queue's subscription, newest first, page by page. */
  allAttempts(queue: string, o: IterOptions<AttemptsOptions> = {}): AsyncGenerator<api.PushAttempt> {
    return paginate((cursor) => this.listSubscriptionAttempts(queue, { ...o, cursor }), (p) => p.attempts);
  }

  // ---- topics (docs/topics.md) ----

  /** Creates a topic (scope `queues:admin`): `topic_exists` (409) for a taken name. */
  createTopic(req: api.CreateTopicRequest, o: CallOptions = {}): Promise<api.Topic> {
    return this.call('createTopic', { body: req, signal: o.signal });
  }

  /** One page of the project's topics, by name. */
  listTopics(o: ListTopicsOptions = {}): Promise<api.TopicList> {
    return this.call('listTopics', { query: { limit: o.limit, cursor: o.cursor, prefix: o.prefix }, signal: o.signal });
  }

  /** Every topic of the project, page by page. */
  allTopics(o: IterOptions<ListTopicsOptions> = {}): AsyncGenerator<api.Topic> {
    return paginate((cursor) => this.listTopics({ ...o, cursor }), (p) => p.topics);
  }

  /** The public keys (a JWK Set) that sign the push tokens of subscriptions with
   *  `auth: {type: "oidc"}` (docs/push.md): what a receiver checks their JWT against. */
  pushJwks(o: CallOptions = {}): Promise<api.JWKS> {
    return this.call('getPushJWKS', { signal: o.signal });
  }

  /** A topic by id, slug or name, with its log's bounds. */
  getTopic(topic: string, o: CallOptions = {}): Promise<api.Topic> {
    return this.call('getTopic', { path: { topic }, signal: o.signal });
  }

  /** Changes a topic's retention (scope `queues:admin`). */
  updateTopic(topic: string, req: api.UpdateTopicRequest, o: CallOptions = {}): Promise<api.Topic> {
    return this.call('updateTopic', { path: { topic }, body: req, signal: o.signal });
  }

  /** Deletes a topic with its log, keyed state and bindings; the queues stay. */
  async deleteTopic(topic: string, o: CallOptions = {}): Promise<void> {
    await this.call('deleteTopic', { path: { topic }, signal: o.signal });
  }

  /** Publishes 1–10 messages; each one's problem is reported in `failed`, not thrown. */
  publishMessages(topic: string, messages: api.PublishMessageEntry[], o: CallOptions = {}): Promise<api.PublishResult> {
    return this.call('publishMessages', { path: { topic }, body: { messages }, signal: o.signal });
  }

  /** Publishes one message and answers its id and sequence; a problem with it is thrown. */
  async publish(topic: string, message: string | api.PublishMessageEntry, o: CallOptions = {}): Promise<api.PublishedMessage> {
    const m = typeof message === 'string' ? { body: message } : message;
    const r = await this.publishMessages(topic, [m], o);
    const f = r.failed[0];
    if (f) throw failedEntryError(f.error);
    return r.messages[0]!;
  }

  /** Reads one page of a topic's log in sequence order (scope `queues:read`). */
  readLog(topic: string, o: ReadLogOptions = {}): Promise<api.LogPage> {
    return this.call('readTopicLog', {
      path: { topic },
      query: { from: position(o.from), to: position(o.to), limit: o.limit, cursor: o.cursor, ...filterQuery(o.filter) },
      signal: o.signal,
    });
  }

  /** Every log entry `o` selects, page by page. */
  logEntries(topic: string, o: IterOptions<ReadLogOptions> = {}): AsyncGenerator<api.LogEntry> {
    return paginate((cursor) => this.readLog(topic, { ...o, cursor }), (p) => p.messages);
  }

  /** One key's state; `not_found` (404) when the key has none. */
  getState(topic: string, key: string, o: CallOptions = {}): Promise<api.StateEntry> {
    return this.call('getTopicState', { path: { topic }, query: { key }, signal: o.signal });
  }

  /** One page of the topic's keyed state, in key order. */
  listState(topic: string, o: PageOptions = {}): Promise<api.StatePage> {
    return this.call('getTopicState', { path: { topic }, query: { limit: o.limit, cursor: o.cursor }, signal: o.signal });
  }

  /** Every key's state, in key order, page by page. */
  allState(topic: string, o: IterOptions = {}): AsyncGenerator<api.StateEntry> {
    return paginate((cursor) => this.listState(topic, { ...o, cursor }), (p) => p.state);
  }

  /**
   * Replays the topic's log entries `from`..`to` (inclusive: sequences, RFC 3339 strings or
   * Dates; `to` absent: the last sequence now) that `filter` selects into `queue` as new
   * messages carrying `replayOf` (scope `queues:admin`). `dryRun` only counts (`toMove`). A
   * queue runs one task at a time (a replay into it or a move task from it): else
   * `move_task_running` (409).
   */
  startReplay(topic: string, req: ReplayRequest, o: CallOptions = {}): Promise<api.Replay> {
    const body: Record<string, unknown> = { ...req, from: position(req.from) };
    if (req.to !== undefined) body.to = position(req.to);
    return this.call('startReplay', { path: { topic }, body, signal: o.signal });
  }

  /** One page of the topic's replays, newest first (scope `queues:read`). */
  listReplays(topic: string, o: PageOptions = {}): Promise<api.ReplayList> {
    return this.call('listReplays', { path: { topic }, query: { limit: o.limit, cursor: o.cursor }, signal: o.signal });
  }

  /** Every replay of the topic, page by page. */
  allReplays(topic: string, o: IterOptions = {}): AsyncGenerator<api.Replay> {
    return paginate((cursor) => this.listReplays(topic, { ...o, cursor }), (p) => p.replays);
  }

  /** One replay with its progress (scope `queues:read`). */
  getReplay(topic: string, replay: string, o: CallOptions = {}): Promise<api.Replay> {
    return this.call('getReplay', { path: { topic, replay }, signal: o.signal });
  }

  /** Stops a running replay after the batch in transit (scope `queues:admin`); a finished one is answered unchanged. */
  cancelReplay(topic: string, replay: string, o: CallOptions = {}): Promise<api.Replay> {
    return this.call('cancelReplay', { path: { topic, replay }, signal: o.signal });
  }

  /**
   * Iterates over a topic's entries from `o.from` on over the topic stream (scope
   * `messages:receive`; docs/streaming.md), yielding each entry and each gap — entries
   * trimmed from the log before they could be delivered, `{kind: 'gap'}` — in order. It
   * keeps the bookmark (the sequence after the last entry yielded) and when the stream ends
   * for a passing reason (a dropped connection, a draining server, `idle`, `unavailable`, a
   * 429) reconnects from it with backoff: nothing skipped or yielded twice across the
   * reconnect. It keeps `o.window` (default 256) of credit granted, granting again as
   * entries are taken. It throws what it cannot get past: `not_found` (the topic deleted),
   * `unauthenticated`, `permission_denied`, `invalid_argument`, or the abort reason.
   *
   * Started at `now` (the default) it first reads the topic's `lastSequence` (scope
   * `queues:read`); without that scope a reconnect before the first entry starts at the new
   * `now`.
   */
  topicStream(topic: string, o: TopicStreamOptions = {}): TopicStream {
    return new TopicStream(
      {
        url: this.url,
        headers: () => this.streamHeaders(),
        lastSequence: (t, signal) => this.getTopic(t, { signal }).then((x) => x.lastSequence, () => undefined),
      },
      topic,
      o,
    );
  }

  /** Opens one topic stream (scope `messages:receive`); it grants no credit: call `credit`. */
  async openTopicStream(topic: string, o: TopicStreamOptions = {}): Promise<TopicStreamConnection> {
    return openTopicStreamAt(topicStreamURL(this.url, topic, o), await this.streamHeaders(), o.signal);
  }

  /** @internal The headers of a stream's upgrade: the User-Agent, the token, a traceparent. */
  async streamHeaders(): Promise<Record<string, string>> {
    const h: Record<string, string> = { 'user-agent': this.#userAgent };
    if (this.#token) h.authorization = `Bearer ${this.#token}`;
    await injectTraceparent(h);
    return h;
  }

  /** The topic's bindings (scope `queues:read`). */
  async topicBindings(topic: string, o: CallOptions = {}): Promise<api.Binding[]> {
    return (await this.call<{ bindings: api.Binding[] }>('listTopicBindings', { path: { topic }, signal: o.signal })).bindings;
  }

  /**
   * Every binding of the topic, as an iterator like the other lists (the route answers them
   * in one page: a topic has at most 100).
   */
  allBindings(topic: string, o: CallOptions = {}): AsyncGenerator<api.Binding> {
    return paginate(
      () => this.call<api.BindingList>('listTopicBindings', { path: { topic }, signal: o.signal }),
      (p) => p.bindings,
    );
  }

  /**
   * Binds queue to a topic (scope `queues:admin`): it receives one copy of every message
   * published from `from` on that `filter` selects. `binding_exists` (409) when already bound.
   */
  bind(queue: string, req: BindRequest, o: CallOptions = {}): Promise<api.Binding> {
    const body: Record<string, unknown> = { topic: req.topic };
    if (req.filter) body.filter = req.filter;
    if (req.from !== undefined) body.from = req.from instanceof Date ? req.from.toISOString() : req.from;
    return this.call('createSource', { path: { queue }, body, signal: o.signal });
  }

  /** The queue's bindings (its sources). */
  async listSources(queue: string, o: CallOptions = {}): Promise<api.Binding[]> {
    return (await this.call<{ sources: api.Binding[] }>('listSources', { path: { queue }, signal: o.signal })).sources;
  }

  /** Every binding feeding the queue (one page: a queue has at most 10), as an iterator. */
  allSources(queue: string, o: CallOptions = {}): AsyncGenerator<api.Binding> {
    return paginate(
      () => this.call<{ sources: api.Binding[]; nextCursor?: string | null }>('listSources', { path: { queue }, signal: o.signal }),
      (p) => p.sources,
    );
  }

  /** One of the queue's bindings, by id or slug. */
  getSource(queue: string, binding: string, o: CallOptions = {}): Promise<api.Binding> {
    return this.call('getSource', { path: { queue, binding }, signal: o.signal });
  }

  /** Replaces a binding's filter (null: every message enters the queue). */
  updateSourceFilter(queue: string, binding: string, filter: api.AttributeFilter | null, o: CallOptions = {}): Promise<api.Binding> {
    return this.call('updateSource', { path: { queue, binding }, body: { filter }, signal: o.signal });
  }

  /** Deletes a binding: the queue receives nothing more from the topic and keeps what it has. */
  async unbind(queue: string, binding: string, o: CallOptions = {}): Promise<void> {
    await this.call('deleteSource', { path: { queue, binding }, signal: o.signal });
  }

  // ---- consuming ----

  /**
   * Receives from queue and runs handler for each message until opts.signal aborts, settling
   * each message from the handler's result (see Handler and ConsumeOptions).
   */
  consume(queue: string, handler: Handler, opts: ConsumeOptions = {}): Promise<void> {
    return consume(this, queue, handler, opts);
  }

  // ---- operations ----

  /** Liveness (`GET /healthz`). */
  health(o: CallOptions = {}): Promise<api.HealthStatus> {
    return this.call('getHealth', { signal: o.signal });
  }

  /** Readiness (`GET /readyz`): throws `503 unavailable` naming the failing dependency. */
  ready(o: CallOptions = {}): Promise<api.ReadyStatus> {
    return this.call('getReadiness', { signal: o.signal });
  }
}
