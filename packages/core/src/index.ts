/**
 * The browser-safe root entry of workq's core: the job contract DSL, its
 * helper types and the error type. No database driver is imported from here.
 */

export type { CompatibilityProblem, SchemaSnapshot } from './contract/compatibility.ts';
export { checkCompatibility, snapshotCatalog } from './contract/compatibility.ts';
export { defineCatalog, isValidJobName } from './contract/define-catalog.ts';
export type { JobSpec } from './contract/define-job.ts';
export { defineJob } from './contract/define-job.ts';
export type { JobJsonSchema, SchemaChange, UncheckedConstraint } from './contract/json-schema.ts';
export {
  canonicalJson,
  catalogJsonSchemas,
  diffJsonSchemas,
  toPayloadJsonSchema,
  uncheckedConstraintsOf,
} from './contract/json-schema.ts';
export { parseWith, payloadSchemaOf, upgradePayload } from './contract/payload.ts';
export type {
  AnyJobDefinition,
  Backoff,
  Catalog,
  JobDefaults,
  JobDefinition,
  JobName,
  JobOrder,
  JobRetention,
  PayloadInput,
  PayloadOutput,
  PreviousVersion,
  ResultInput,
  ResultOutput,
} from './contract/types.ts';
export type { WorkqErrorCode, WorkqErrorOptions } from './errors.ts';
export { isWorkqError, isWorkqErrorCode, WORKQ_ERROR_CODES, WorkqError } from './errors.ts';
export type { WireEventBatch, WireEventDetails, WireEventRun } from './event-wire.ts';
export { decodeEventBatch, encodeEventBatch, eventBatchBytes, eventBatchWireParts } from './event-wire.ts';
export type { JobEvent, JobEventDetails, JobEventError, JobEventRun, JobEventType, ResyncEvent } from './events.ts';
export { JOB_EVENT_TYPES } from './events.ts';
export { checkJobId, newJobId } from './job-ids.ts';
export type {
  ChildFailurePolicy,
  ChildSummary,
  DebounceMode,
  DebounceOptions,
  EnqueueOptions,
  FinishedState,
  IdempotencyUntil,
  JobError,
  JobState,
  JobStatus,
  TraceContext,
} from './jobs.ts';
export {
  CHILD_FAILURE_POLICIES,
  DEBOUNCE_MODES,
  ERROR_HISTORY_LIMITS,
  FINISHED_STATES,
  FLOW_LIMITS,
  IDEMPOTENCY_UNTIL,
  isFinishedState,
  JOB_STATES,
  LEASE_MS_LIMITS,
  LEASE_TOKEN_MAX_CHARS,
  MAX_BATCH_SIZE,
  RETENTION_MS_LIMITS,
  TIMEOUT_MS_LIMITS,
} from './jobs.ts';
export { wireTransformer } from './wire-transformer.ts';
