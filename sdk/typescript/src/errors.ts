import type { ErrorCode } from './openapi.js';

/** A code the service answers, or one the SDK uses for a failure without an answer. */
export type QueuesErrorCode = ErrorCode | 'quota_exceeded' | (string & {});

/**
 * An error answered by the service (`{"error": {"code", "message", "details"}}`), or a
 * transport failure (code `"network"`, status 0).
 */
export class QueuesError extends Error {
  /** The stable snake_case code, such as `not_found` or `receipt_handle_stale`. */
  readonly code: QueuesErrorCode;
  /** The HTTP status (0 when no answer arrived). */
  readonly status: number;
  /** `details.field`: the request field at fault as a path, such as `messages[2].delaySeconds`. */
  readonly field: string | undefined;
  /** The answer's `Retry-After`, in seconds, when it had one. */
  readonly retryAfter: number | undefined;
  /** The answer's `X-Request-Id`, for support. */
  readonly requestId: string | undefined;
  /** Everything in `details`. */
  readonly details: Record<string, unknown>;

  constructor(init: {
    code: QueuesErrorCode;
    message: string;
    status: number;
    details?: Record<string, unknown> | undefined;
    retryAfter?: number | undefined;
    requestId?: string | undefined;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status;
    this.details = init.details ?? {};
    this.field = typeof this.details.field === 'string' ? this.details.field : undefined;
    this.retryAfter = init.retryAfter;
    this.requestId = init.requestId;
  }

  override toString(): string {
    const field = this.field ? ` (field ${this.field})` : '';
    return `${this.name}: ${this.status} ${this.code}: ${this.message}${field}`;
  }
}

/** A request the service refused as malformed (400 `invalid_argument`, 413, 415, `visibility_limit_exceeded`); `field` names the part. */
export class ValidationError extends QueuesError {}
/** The token is missing, unknown, expired or revoked (401 `unauthenticated`); ForbiddenError is its 403 sibling. */
export class AuthError extends QueuesError {}
/** The token is good but lacks the scope or project (403 `permission_denied`); also an AuthError, as isAuth. */
export class ForbiddenError extends AuthError {}
/** The queue, topic, message, task or other resource does not exist (404 `not_found`). */
export class NotFoundError extends QueuesError {}
/** The state forbids the call: the name is taken, the queue is in use, a task runs, the message is in flight (409). */
export class ConflictError extends QueuesError {}
/** The receipt handle is spent: the delivery is over (410 `receipt_handle_stale`). */
export class StaleReceiptError extends QueuesError {}
/** The receipt handle is not one the service issued (400 `receipt_handle_invalid`). */
export class InvalidReceiptError extends ValidationError {}
/** A project limit (403 `quota_exceeded`); `limit` names it. */
export class QuotaExceededError extends QueuesError {
  /** `details.limit`: the project limit the call would pass, such as `maxQueues`. */
  get limit(): string | undefined {
    return typeof this.details.limit === 'string' ? this.details.limit : undefined;
  }
}
/** Too many calls (429 `rate_limited`, or `purge_too_soon`); `retryAfter` says when to try again. */
export class RateLimitedError extends QueuesError {}
/** The service could not serve the call now (503 `unavailable`), or no answer arrived (`network`). */
export class UnavailableError extends QueuesError {}
/** The service failed (500 `internal`, or another 5xx); `requestId` identifies it for support. */
export class InternalError extends QueuesError {}

type ErrorClass = new (init: ConstructorParameters<typeof QueuesError>[0]) => QueuesError;

// The class of each code; a code the SDK does not know stays a plain QueuesError, so a new
// server code never breaks a client.
const classes: Record<string, ErrorClass> = {
  invalid_argument: ValidationError,
  payload_too_large: ValidationError,
  unsupported_media_type: ValidationError,
  visibility_limit_exceeded: ValidationError,
  receipt_handle_invalid: InvalidReceiptError,
  unauthenticated: AuthError,
  permission_denied: ForbiddenError,
  not_found: NotFoundError,
  queue_exists: ConflictError,
  queue_in_use: ConflictError,
  subscription_exists: ConflictError,
  topic_exists: ConflictError,
  binding_exists: ConflictError,
  group_not_parked: ConflictError,
  move_task_running: ConflictError,
  message_in_flight: ConflictError,
  receipt_handle_stale: StaleReceiptError,
  quota_exceeded: QuotaExceededError,
  rate_limited: RateLimitedError,
  purge_too_soon: RateLimitedError,
  unavailable: UnavailableError,
  network: UnavailableError,
  internal: InternalError,
};

/** The error of a code: an instance of the subclass the code has (NotFoundError for `not_found`, …), else a QueuesError. */
export function queuesError(init: ConstructorParameters<typeof QueuesError>[0]): QueuesError {
  const C = classes[init.code] ?? (init.status >= 500 ? InternalError : QueuesError);
  return new C(init);
}

/** True when err is a QueuesError with the given code. */
export function isCode(err: unknown, code: QueuesErrorCode): err is QueuesError {
  return err instanceof QueuesError && err.code === code;
}

/** True when the receipt handle is spent: the delivery is over (`410 receipt_handle_stale`). */
export function isStale(err: unknown): err is QueuesError {
  return isCode(err, 'receipt_handle_stale');
}

/** True when the token is missing, bad or lacks the scope (401 or 403). */
export function isAuth(err: unknown): err is QueuesError {
  return isCode(err, 'unauthenticated') || isCode(err, 'permission_denied');
}

/** True for a project limit (`403 quota_exceeded`); `details.limit` names it. */
export function isQuotaExceeded(err: unknown): err is QueuesError {
  return isCode(err, 'quota_exceeded');
}

export function parseRetryAfter(v: string | null): number | undefined {
  if (v === null || v.trim() === '') return undefined;
  const s = Number(v.trim());
  if (Number.isInteger(s) && s >= 0) return s;
  const t = Date.parse(v);
  if (!Number.isNaN(t)) return Math.max(0, Math.ceil((t - Date.now()) / 1000));
  return undefined;
}

/** Builds the QueuesError of a non-2xx answer. */
export async function errorFromResponse(res: Response): Promise<QueuesError> {
  const retryAfter = parseRetryAfter(res.headers.get('retry-after'));
  const requestId = res.headers.get('x-request-id') ?? undefined;
  const text = await res.text().catch(() => '');
  let code: string = statusCode(res.status);
  let message = text.trim() || res.statusText || `HTTP ${res.status}`;
  let details: Record<string, unknown> | undefined;
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    if (body && typeof body.error === 'object' && body.error !== null) {
      if (typeof body.error.code === 'string') code = body.error.code;
      if (typeof body.error.message === 'string') message = body.error.message;
      if (typeof body.error.details === 'object' && body.error.details !== null) {
        details = body.error.details as Record<string, unknown>;
      }
    }
  } catch {
    // not JSON: keep the status's code and the text
  }
  return queuesError({ code, message, status: res.status, details, retryAfter, requestId });
}

// statusCode names an answer whose body is not the error shape (a proxy's page, say).
function statusCode(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_argument';
    case 401:
      return 'unauthenticated';
    case 403:
      return 'permission_denied';
    case 404:
      return 'not_found';
    case 405:
      return 'method_not_allowed';
    case 413:
      return 'payload_too_large';
    case 429:
      return 'rate_limited';
    case 503:
      return 'unavailable';
  }
  return status >= 500 ? 'internal' : `http_${status}`;
}
