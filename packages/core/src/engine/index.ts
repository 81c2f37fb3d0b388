/**
 * `@workq/core/engine`: the queue engine, `openStore`, and `createQueueRuntime`, which composes what a server
 * runs around them (the claim dispatcher, the wake-up bus, the event hub, the maintenance roles), with the
 * names the server and embedders use. Server-side; drivers load only when `openStore` picks their store.
 * Everything else in core is internal: modules import it by path.
 */

export { CancelledLeases } from '../dispatch/cancelled-leases.ts';
export type { ClaimAnswer, ClaimRoom, ClaimWait } from '../dispatch/claim-dispatcher.ts';
export { ClaimDispatcher } from '../dispatch/claim-dispatcher.ts';
export type { StopScope } from '../dispatch/claims-in-progress.ts';
export { EventHub } from '../notify/event-hub.ts';
export { WakeupBus } from '../notify/wakeup-bus.ts';
export type { SchedulerDeps } from '../roles/cron.ts';
export { CronScheduler } from '../roles/cron.ts';
export type { CronEntry, ScheduledEntry } from '../roles/cron-entries.ts';
export {
  describeEntry,
  fromStoredSchedule,
  parseCrontab,
  parseSchedule,
  runKey,
  toStoredSchedule,
} from '../roles/cron-entries.ts';
export type { QueueRuntime, QueueRuntimeOptions } from '../runtime.ts';
export { createQueueRuntime } from '../runtime.ts';
export type { OpenStoreOptions } from '../stores/open-store.ts';
export { openStore, redactUrl } from '../stores/open-store.ts';
export { valueBytes } from '../value-bytes.ts';
export type { Clock } from './clock.ts';
export type { ClaimedJob, EngineOptions, EnqueueInput, EnqueueResult, ListQuery } from './engine.ts';
export { createEngine, Engine } from './engine.ts';
export type { QueueInfo } from './flow-control.ts';
export type { QueueLimits } from './flow-control-store.ts';
export type { ChildInput, FlowInput, HeldChild } from './flows.ts';
export type { SnoozeUntil } from './handler-scheduling.ts';
export { HANDLER_SCHEDULING_LIMITS } from './handler-scheduling.ts';
export { leaseClaimedAtMs, newLeaseToken } from './ids.ts';
export { DEFAULT_HISTORY_RETENTION_MS, TRACE_CONTEXT_LIMITS } from './options.ts';
export type { SchemaEntry } from './registry-store.ts';
export type { SchemaLimits, SchemaRegistration } from './schema-registry.ts';
export { DEFAULT_SCHEMA_LIMITS, fingerprintOf, SchemaRegistry } from './schema-registry.ts';
export { toJobStatus, visibleState } from './status.ts';
export type { CountScope, JobCount, JobRecord, LeaseRef, ListFilter, Store, WorkerPresence } from './store.ts';
export { fromStoredValue, plainStoredBytesBound, toStoredText, toStoredValue } from './stored-value.ts';
