import { describe, expectTypeOf, it } from 'vitest';
import type { LeaderElection } from '../roles/leadership.ts';
import type { MongoStore } from '../stores/mongodb/mongo-store.ts';
import type { MysqlStore } from '../stores/mysql/mysql-store.ts';
import type { PostgresStore } from '../stores/postgres/postgres-store.ts';
import type { AdminStore, CompleteAndClaim, Handoff, JobStore, Store, StoreNotifier, UpkeepStore } from './store.ts';

/** The names of `T`'s methods. */
type Operations<T> = { [K in keyof T]-?: T[K] extends (...args: never[]) => unknown ? K : never }[keyof T];

describe('the store contract', () => {
  it('holds the sixteen job operations every store has apart from the upkeep and admin parts', () => {
    expectTypeOf<Operations<JobStore>>().toEqualTypeOf<
      | 'insertJobs'
      | 'debounceJobs'
      | 'claimJobs'
      | 'completeJobs'
      | 'releaseJobs'
      | 'failJob'
      | 'snoozeJob'
      | 'extendLease'
      | 'recordProgress'
      | 'updatePayload'
      | 'moveJob'
      | 'cancelJob'
      | 'getJob'
      | 'listJobs'
      | 'ping'
      | 'close'
    >();
    expectTypeOf<Operations<UpkeepStore>>().toEqualTypeOf<'requeueExpiredLeases' | 'pruneJobs'>();
    expectTypeOf<Operations<AdminStore>>().toEqualTypeOf<
      'countJobs' | 'retryDeadJobs' | 'promoteJob' | 'rerunCompletedJob' | 'restoreCancelledJob' | 'removeJobByKey'
    >();
  });

  it('leaves the optional parts optional and declares no capability flags', () => {
    expectTypeOf<Store['handoff']>().toEqualTypeOf<Handoff | undefined>();
    expectTypeOf<Store['completeAndClaim']>().toEqualTypeOf<CompleteAndClaim | undefined>();
    expectTypeOf<Store['notifier']>().toEqualTypeOf<StoreNotifier | undefined>();
    expectTypeOf<Store['leadership']>().toEqualTypeOf<LeaderElection | undefined>();
    expectTypeOf<Store>().not.toHaveProperty('capabilities');
  });

  it("says by each store's type which optional parts it has", () => {
    expectTypeOf<PostgresStore['handoff']>().toEqualTypeOf<Handoff>();
    expectTypeOf<PostgresStore['completeAndClaim']>().toEqualTypeOf<CompleteAndClaim>();
    expectTypeOf<MysqlStore['handoff']>().toEqualTypeOf<Handoff>();
    expectTypeOf<MysqlStore>().not.toHaveProperty('completeAndClaim');
    expectTypeOf<MongoStore['handoff']>().toEqualTypeOf<Handoff>();
    expectTypeOf<MongoStore>().not.toHaveProperty('completeAndClaim');
    expectTypeOf<PostgresStore['leadership']>().toEqualTypeOf<LeaderElection>();
    expectTypeOf<MysqlStore['leadership']>().toEqualTypeOf<LeaderElection>();
    expectTypeOf<MongoStore['leadership']>().toEqualTypeOf<LeaderElection>();
  });
});
