/**
 * `@workq/core/engine`: the queue engine, the store contract, `openStore`, and what a server
 * runs around them: the claim dispatcher and the wake-up bus.
 * Server-side; drivers load only when `openStore` picks their store.
 */

export type {
  CarriedAck,
  ClaimAnswer,
  DispatchedClaim,
  DispatcherOptions,
  DispatchObserver,
} from '../dispatch/claim-dispatcher.ts';
export { ClaimDispatcher } from '../dispatch/claim-dispatcher.ts';
export type { StopScope } from '../dispatch/claims-in-progress.ts';
export type { JobEvent, JobEventError, JobEventRun, JobEventType, ResyncEvent } from '../events.ts';
export { JOB_EVENT_TYPES } from '../events.ts';
export { FINISHED_STATES } from '../jobs.ts';
export type { EventBatch, EventHubOptions, EventSubscription } from '../notify/event-hub.ts';
export { EventHub } from '../notify/event-hub.ts';
export type { BusJobEvent, WakeupMessage, WakeupNotification } from '../notify/messages.ts';
export { decodeWakeups, encodeWakeups } from '../notify/messages.ts';
export { WakeupBus } from '../notify/wakeup-bus.ts';
export type { SchedulerDeps } from '../roles/cron.ts';
export { CronScheduler } from '../roles/cron.ts';
export type { CronEntry, ScheduledEntry } from '../roles/cron-entries.ts';
export {
  describeEntry,
  fromStoredSchedule,
  occurrenceKey,
  parseCrontab,
  parseSchedule,
  runKey,
  toStoredSchedule,
} from '../roles/cron-entries.ts';
export type { LeaderElection } from '../roles/leadership.ts';
export type { Role, RoleRunnerOptions } from '../roles/role-runner.ts';
export { leaseSweeper, periodicRole, pruner, RoleRunner } from '../roles/role-runner.ts';
export type { OpenStoreOptions } from '../stores/open-store.ts';
export { openStore, redactUrl } from '../stores/open-store.ts';
export { backoffDelayMs } from './backoff.ts';
export type { Clock } from './clock.ts';
export { systemClock } from './clock.ts';
export type {
  ClaimedJob,
  ClaimInput,
  CompleteOutcome,
  EngineOptions,
  EnqueueInput,
  EnqueueResult,
  FinishedListener,
  ListQuery,
  ReadyListener,
} from './engine.ts';
export { createEngine, Engine } from './engine.ts';
export type { LimitsChange, PlaceLimits, QueueInfo, StateCounts } from './flow-control.ts';
export { leaseClaimedAtMs, newJobId, newLeaseToken } from './ids.ts';
export type { JobEventSink } from './job-events.ts';
export type { EnqueueOptions, ResolvedJobOptions } from './options.ts';
export {
  DEFAULT_HISTORY_RETENTION_MS,
  ENGINE_JOB_DEFAULTS,
  resolveJobOptions,
  TRACE_CONTEXT_LIMITS,
} from './options.ts';
export type { SchemaLimits, SchemaRegistration, SchemaRegistryOptions } from './schema-registry.ts';
export { DEFAULT_SCHEMA_LIMITS, fingerprintOf, SchemaRegistry } from './schema-registry.ts';
export { toJobStatus, visibleState } from './status.ts';
export type {
  ClaimRequest,
  ClosableNotifier,
  CountScope,
  InsertOutcome,
  JobCount,
  JobRecord,
  KeyHolderGone,
  LeaseRef,
  LimitedClaim,
  ListFilter,
  NewJob,
  QueueLimits,
  QueueSettings,
  QueueSettingsChange,
  RegistryStore,
  ScheduleRun,
  ScheduleStore,
  SchemaEntry,
  Store,
  StoreCapabilities,
  StoredSchedule,
  StoredState,
  StoreNotifier,
  WorkerPresence,
  WorkerRoom,
} from './store.ts';
export { WORKER_REGISTRY_BOUNDS } from './store.ts';
export { fromStoredValue, MAX_STORED_DEPTH, toStoredText, toStoredValue } from './stored-value.ts';
