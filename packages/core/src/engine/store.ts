import type { LeaderElection } from '../roles/leadership.ts';
import type { AdminStore } from './admin-store.ts';
import type { FlowControlStore } from './flow-control-store.ts';
import type { FlowStore } from './flow-store.ts';
import type { JobStore } from './job-store.ts';
import type { CompleteAndClaim, Handoff, StoreNotifier } from './optional-parts.ts';
import type { RegistryStore } from './registry-store.ts';
import type { ScheduleStore } from './schedule-store.ts';
import type { UpkeepStore } from './upkeep-store.ts';

export type { AdminStore, CountScope } from './admin-store.ts';

export type {
  FlowControlStore,
  LimitedClaim,
  QueueLimits,
  QueueSettings,
  QueueSettingsChange,
} from './flow-control-store.ts';
export { NO_GROUP } from './flow-control-store.ts';
export type { ChildOutcome, ChildrenPageQuery, ChildState, FlowStore, HeldChildrenPage } from './flow-store.ts';
export { CHILD_FAILED_CODE, childFailedError, FLOW_CANCELLED_CODE, flowCancelledError } from './flow-store.ts';
export type { JobStore } from './job-store.ts';
export type { ClosableNotifier, CompleteAndClaim, Handoff, StoreNotifier } from './optional-parts.ts';
export type { RegistryStore, SchemaEntry, WorkerPresence, WorkerRoom } from './registry-store.ts';
export { WORKER_REGISTRY_BOUNDS } from './registry-store.ts';
export type { ScheduleRun, ScheduleStore, StoredSchedule } from './schedule-store.ts';
export type {
  ClaimedRecord,
  ClaimRequest,
  InsertOutcome,
  JobCount,
  JobRead,
  JobRecord,
  KeyHolderGone,
  LeaseRef,
  ListFilter,
  NewJob,
  StoredState,
  SweptLease,
} from './store-records.ts';
export { STORED_STATES } from './store-records.ts';
export type { UpkeepStore } from './upkeep-store.ts';

/**
 * A store, as the engine and the server hold it: the job operations every store has (`JobStore`), the
 * maintenance roles' (`UpkeepStore`) and the operator's (`AdminStore`), the registries, schedules and flow
 * control kept beside the jobs, flows (`FlowStore`), and the optional parts a store has or lacks. Core checks for an optional
 * part's presence and falls back explicitly where it is missing; a store's own type says which it has.
 */
export interface Store
  extends JobStore,
    UpkeepStore,
    AdminStore,
    RegistryStore,
    ScheduleStore,
    FlowControlStore,
    FlowStore {
  /** Cross-process wake-ups; without them, consumers on other processes notice jobs by polling alone. */
  readonly notifier?: StoreNotifier | undefined;
  /**
   * Leader election among the servers on this store: with it, one server at a time runs the maintenance
   * roles; without it, every server runs them.
   */
  readonly leadership?: LeaderElection | undefined;
  /** Insert-and-claim: a job enqueued for a consumer already waiting is leased to it by its insert. */
  readonly handoff?: Handoff | undefined;
  /** Complete-and-claim: a limited claim's acks and its lease commit together. */
  readonly completeAndClaim?: CompleteAndClaim | undefined;
}
