// Names of the project (limits and metering) and SQS-credential types that the client has
// used since before openapi.yaml described them; they are now the generated schemas, so
// they are drift-checked like every other type.
import type { Limits, ProjectUsage, UsageList } from './openapi.js';

export type { ProjectDetail, SQSCredentials, UpdateProjectRequest, UsageHour } from './openapi.js';

/** A project's limits; each applies the operator's default unless the project has its own. */
export type ProjectLimits = Limits;

/** A project's current usage (queues, subscriptions, storedBytes). */
export type ProjectUsageNow = ProjectUsage;

/** The answer of the usage routes: hours in order. */
export type UsageReport = UsageList;

/** A usage query: RFC 3339 times or Dates; the default is the last 24 hours, 31 days at most. */
export interface UsageQuery {
  from?: string | Date;
  to?: string | Date;
}
