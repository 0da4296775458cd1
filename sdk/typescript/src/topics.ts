// The topic request shapes the client takes beyond the generated ones (docs/topics.md,
// docs/topics.md). The wire types (Topic, Binding, LogEntry, StateEntry, PublishResult, …)
// are generated from openapi.yaml into openapi.ts, drift-checked like every other.
import type { AttributeFilter } from './openapi.js';

/**
 * Where a binding starts: `now` (default), `earliest` (the oldest entry the log holds), a
 * sequence (a number, or a decimal string), or an RFC 3339 time (a string or a Date: the first
 * entry published at or after it).
 */
export type BindFrom = 'now' | 'earliest' | number | string | Date;

/** A bind: the topic (id, slug or name), an optional filter, where to start. */
export interface BindRequest {
  topic: string;
  filter?: AttributeFilter | null;
  from?: BindFrom;
}
