// Types of the project routes (limits and metering). They follow the service's tenancy
// contract; openapi.yaml describes these routes once the server has them, and the drift test
// then holds the client to its methods and paths like every other route.
import type { Project } from './openapi.js';

/** A project's limits; each applies the operator's default unless the project has its own. */
export interface ProjectLimits {
  /** Most queues (default 1,000); creating one more is `403 quota_exceeded`. */
  maxQueues: number;
  /** Most push subscriptions (default 100). */
  maxSubscriptions: number;
  /** Most payload bytes held in every state, dead-letter queues included (default 1 GiB). */
  maxStoredBytes: number;
  /** Every `/v1` call with the project's tokens plus receipt calls on its queues (default 10,000). */
  requestsPerSecond: number;
  /** Long polls parked at once (default 1,000); a receive over it answers an empty list at once. */
  maxWaitingReceives: number;
}

/** A project's current usage. */
export interface ProjectUsageNow {
  queues: number;
  subscriptions: number;
  /** Exact within 10 s of any change. */
  storedBytes: number;
}

/** A project with its limits and usage (`GET /v1/project`, `GET /v1/projects/{project}`). */
export interface ProjectDetail extends Project {
  limits: ProjectLimits;
  usage: ProjectUsageNow;
}

/** `PATCH /v1/projects/{project}`: any subset of the limits; `null` returns one to the default. */
export interface UpdateProjectRequest {
  limits: { [K in keyof ProjectLimits]?: number | null };
}

/** One UTC hour of a project's metered counters. */
export interface UsageHour {
  /** The hour's start (RFC 3339). */
  hour: string;
  requests: number;
  messagesSent: number;
  messagesDelivered: number;
  messagesAcked: number;
  bytesIn: number;
  bytesOut: number;
  pushAttempts: number;
  storedByteHours: number;
  [counter: string]: number | string;
}

/** The answer of the usage routes: hours in order. */
export interface UsageReport {
  usage: UsageHour[];
}

/** A usage query: RFC 3339 times or Dates; the default is the last 24 hours, 31 days at most. */
export interface UsageQuery {
  from?: string | Date;
  to?: string | Date;
}

/** A token's key pair for the SQS-compatible endpoint (AWS Signature Version 4). */
export interface SQSCredentials {
  /** The token's slug. */
  accessKeyId: string;
  secretAccessKey: string;
}
