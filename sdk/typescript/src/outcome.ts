// The settlement vocabulary shared by the consumer and the push receivers: what a handler's
// result does to its message.

const brand: unique symbol = Symbol('queues.outcome');

/** A settlement decision; make one with ack, retry, retryAfter, deadLetter, cancel or defer. */
export type Outcome =
  | { readonly [brand]: true; readonly kind: 'ack' }
  | { readonly [brand]: true; readonly kind: 'retry'; readonly delaySeconds: number }
  | { readonly [brand]: true; readonly kind: 'dead-letter'; readonly reason?: string }
  | { readonly [brand]: true; readonly kind: 'cancel' }
  | { readonly [brand]: true; readonly kind: 'defer' };

/** Acknowledged (deleted); the same as returning nothing. */
export function ack(): Outcome {
  return { [brand]: true, kind: 'ack' };
}

/** Visible again now. */
export function retry(): Outcome {
  return { [brand]: true, kind: 'retry', delaySeconds: 0 };
}

/** Visible again after `seconds` (rounded up); it stays in flight until then. */
export function retryAfter(seconds: number): Outcome {
  return { [brand]: true, kind: 'retry', delaySeconds: Math.max(0, Math.ceil(seconds)) };
}

/** Moved to the queue's dead-letter queue now, with `reason` (default "consumer"). */
export function deadLetter(reason?: string): Outcome {
  return reason ? { [brand]: true, kind: 'dead-letter', reason } : { [brand]: true, kind: 'dead-letter' };
}

/**
 * Visible again now without counting this delivery (its receiveCount one lower); the cancel
 * beyond the queue's maxCancels moves it to the dead-letter queue (reason "max_cancels").
 */
export function cancel(): Outcome {
  return { [brand]: true, kind: 'cancel' };
}

/**
 * Not settled: the message stays in flight until its deadline, for the application to settle
 * by its receipt handle (ack, changeVisibility, deadLetter) — "answer now, settle later".
 */
export function defer(): Outcome {
  return { [brand]: true, kind: 'defer' };
}

/** True for a value made by one of the outcome functions. */
export function isOutcome(v: unknown): v is Outcome {
  return typeof v === 'object' && v !== null && (v as { [brand]?: unknown })[brand] === true;
}

/**
 * What a handler may give back: nothing (ack) or an Outcome. A handler may also throw an
 * Outcome; any other throw (or rejection) is a retry.
 */
export type HandlerResult = Outcome | void | undefined;

/** The outcome a handler asks for, and the error when it failed (a failure is a retry). */
export function outcomeOf(r: { value: unknown } | { error: unknown }): { outcome: Outcome; error?: unknown } {
  if ('error' in r) {
    if (isOutcome(r.error)) return { outcome: r.error };
    return { outcome: retry(), error: r.error };
  }
  return { outcome: isOutcome(r.value) ? r.value : ack() };
}
