// The Queues SDK for TypeScript and JavaScript: a typed client of the HTTP API, a consumer
// that settles messages from a handler's result, and push receivers that verify Standard
// Webhooks signatures. This core imports no node: module (edge runtimes and browsers load
// it); node.ts, the `./node` entry, adds what needs Node.
export { QueuesClient } from './client.js';
export type {
  AttemptsOptions,
  BrowseOptions,
  CallOptions,
  ClientOptions,
  EntryErrors,
  IterOptions,
  ListQueuesOptions,
  ListTopicsOptions,
  PageOptions,
  ReadLogOptions,
  ReplayRequest,
  RetryPolicy,
  RouteCall,
} from './client.js';
export { VERSION } from './version.js';
export { DEFAULT_URL, MAX_BATCH, MAX_RECEIPT_BATCH } from './limits.js';
export { routes, type RouteName } from './routes.js';
export {
  AuthError,
  ConflictError,
  ForbiddenError,
  InternalError,
  InvalidReceiptError,
  NotFoundError,
  QueuesError,
  QuotaExceededError,
  RateLimitedError,
  StaleReceiptError,
  UnavailableError,
  ValidationError,
  isAuth,
  isCode,
  isQuotaExceeded,
  isStale,
  type QueuesErrorCode,
} from './errors.js';
export { ack, cancel, deadLetter, defer, isOutcome, retry, retryAfter, type HandlerResult, type Outcome } from './outcome.js';
export { ConsumerError, consume, type ConsumeOptions, type Handler, type HandlerContext } from './consumer.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  WEBHOOK_ID,
  WEBHOOK_SIGNATURE,
  WEBHOOK_TIMESTAMP,
  PUBLIC_KEY_PREFIX,
  WebhookVerificationError,
  createPushHandler,
  handlePush,
  signAsync,
  verifyAsync,
  type HeadersLike,
  type PushAnswer,
  type PushContext,
  type PushHandler,
  type PushReceiverOptions,
  type RawBody,
  type VerifyFailure,
  type VerifyOptions,
} from './push.js';
export {
  TokenVerificationError,
  createTokenVerifier,
  type PushTokenClaims,
  type TokenFailure,
  type TokenVerifierOptions,
} from './pushtoken.js';
export { TRACER_NAME } from './tracing.js';
export type { ProjectLimits, ProjectUsageNow, UsageQuery, UsageReport } from './project.js';
export type * from './openapi.js';
export type { BindFrom, BindRequest } from './topics.js';
export { TopicStream, TopicStreamConnection, type TopicEvent, type TopicGap, type TopicStreamFrom, type TopicStreamOptions } from './topicstream.js';
