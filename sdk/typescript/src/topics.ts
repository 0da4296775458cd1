// The wire shapes of topics (SPEC §14, docs/topics.md): a publish appends to a topic's log,
// and every queue bound to the topic receives its own copy of each message its binding's
// filter selects. Written from docs/topics.md before openapi.yaml described them.
import type { FilterAttributes } from './openapi.js';

/** A topic: its settings and the state of its log. */
export interface Topic {
  id: string;
  /** `top_…` */
  slug: string;
  name: string;
  /** Fixed at creation; a topic binds queues of its own type. */
  type: 'standard' | 'fifo';
  /** How long the log keeps what was published (0: nothing beyond fan-out). */
  retentionSeconds: number;
  createdAt: string;
  updatedAt: string;
  /** The oldest sequence the log holds (`lastSequence + 1` when it holds none). */
  firstSequence: number;
  /** The last sequence assigned (0 before the first publish). */
  lastSequence: number;
  /** Bytes of the log and the keyed state. */
  storedBytes: number;
  /** How many queues the topic feeds. */
  bindings: number;
}

export interface CreateTopicRequest {
  name: string;
  /** Default `standard`. */
  type?: 'standard' | 'fifo';
  /** 0–1,209,600; default 86,400. */
  retentionSeconds?: number;
}

export interface UpdateTopicRequest {
  retentionSeconds?: number;
}

export interface TopicList {
  topics: Topic[];
  nextCursor: string | null;
}

/**
 * One message to publish. `body: null` (only with `key`) deletes the key's state. On fifo
 * topics `groupId` is required and `dedupId` optional (a repeat within 5 minutes answers the
 * first publish's id and sequence with `duplicate: true`).
 */
export interface PublishMessageEntry {
  body: string | null;
  attributes?: Record<string, string>;
  groupId?: string;
  dedupId?: string;
  /** Also keep the message as this key's state (`getState`). */
  key?: string;
  /** With `key`: `replace` (default) or `patch` (RFC 7396 merge into the key's state). */
  merge?: 'replace' | 'patch';
}

/** A published message, by its index in the request. */
export interface PublishedMessage {
  index: number;
  messageId: string;
  /** The message's position in the topic's log (the bookmark). */
  sequence: number;
  duplicate: boolean;
}

/** The answer to a publish: each message published or failed (as a send's). */
export interface PublishResult {
  messages: PublishedMessage[];
  failed: { index: number; error: { code: string; message: string; details?: Record<string, unknown> } }[];
}

/** A binding's filter, as a filtered receive's. */
export interface BindingFilter {
  attributes: FilterAttributes;
}

/**
 * Where a binding starts: `now` (default), `earliest` (the oldest entry the log holds), a
 * sequence (a number, or a decimal string), or an RFC 3339 time (a string or a Date: the first
 * entry published at or after it).
 */
export type BindFrom = 'now' | 'earliest' | number | string | Date;

export interface BindRequest {
  /** The topic's id, slug or name. */
  topic: string;
  filter?: BindingFilter | null;
  from?: BindFrom;
}

/** A queue's source: one topic, with a filter, and the fan-out's progress. */
export interface Binding {
  id: string;
  /** `qbd_…` */
  slug: string;
  queueId: string;
  /** The queue's name. */
  queue: string;
  topicId: string;
  /** The topic's name. */
  topic: string;
  filter: BindingFilter | null;
  /** What the bind asked. */
  from: string | number;
  /** The first sequence the binding takes. */
  startSequence: number;
  /** The last sequence handled (copied, filtered out or refused). */
  sequence: number;
  /** The topic's `lastSequence` minus `sequence`. */
  lag: number;
  /** What entered the queue. */
  copied: number;
  /** What the queue refused. */
  failed: number;
  lastFailure: { reason: string; at: string } | null;
  createdAt: string;
  updatedAt: string;
}

/** One published message as the topic's log keeps it. */
export interface LogEntry {
  sequence: number;
  messageId: string;
  body: string | null;
  attributes: Record<string, string>;
  publishedAt: string;
  groupId?: string;
  dedupId?: string;
  key?: string;
  /** A keyed publish of a null body: it deleted the key's state. */
  deleted?: boolean;
}

export interface LogPage {
  messages: LogEntry[];
  nextCursor: string | null;
}

/** One key's latest state: the last message published with it (merged, for `patch`). */
export interface StateEntry {
  key: string;
  body: string;
  attributes: Record<string, string>;
  sequence: number;
  publishedAt: string;
}

export interface StatePage {
  state: StateEntry[];
  nextCursor: string | null;
}
