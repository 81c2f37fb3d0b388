import { MAX_BATCH_SIZE } from '@workq/core';
import type { JobRecord, Store } from '@workq/core/engine';
import {
  freshMongoDatabase,
  freshMysqlDatabase,
  freshPostgresSchema,
  mongoUnreachableReason,
  mysqlUnreachableReason,
} from '@workq/test-support';
import { describe } from 'vitest';
import { createMongoDriverDouble } from '../../packages/core/test/support/mongodb-double.ts';
import { mongoStoreOnDouble } from '../../packages/core/test/support/mongodb-on-double.ts';

/** A store one test file has to itself: the URL a queue server opens, and how to remove it afterwards. */
export interface FreshStore {
  url: string;
  /** For a store no URL reaches: opens another store object over the same data (as another connection would). */
  openAnother?: () => Promise<Store>;
  drop: () => Promise<void>;
}

/**
 * What to give one more queue server in this process for `target`'s data: its URL, or, for a store no URL
 * reaches, another opened store object over the same data, which that server closes.
 */
export async function serverStore(target: FreshStore): Promise<string | Store> {
  return target.openAnother ? target.openAnother() : target.url;
}

/** A kind of store the end-to-end tests run on, one row of `describeEachStore`. */
export interface E2EStoreKind {
  label: string;
  /** Makes a fresh, empty store of this kind, ready for a server to open. */
  open: () => Promise<FreshStore>;
  /** Why this kind cannot be reached here; resolves to `undefined` when it can. Absent: assumed reachable. */
  unreachableReason?: () => Promise<string | undefined>;
}

/** Each kind's store for one test file is a schema or database of its own, named `workq_e2e_<random>`. */
const E2E_PREFIX = 'workq_e2e';

const postgres: E2EStoreKind = { label: 'postgres', open: async () => freshPostgresSchema(E2E_PREFIX) };
const pglite: E2EStoreKind = { label: 'pglite', open: async () => ({ url: 'pglite://memory', drop: async () => {} }) };
const mariadb: E2EStoreKind = {
  label: 'mysql',
  open: () => freshMysqlDatabase(E2E_PREFIX),
  unreachableReason: mysqlUnreachableReason,
};

/** The stores every end-to-end flow runs on. */
export const E2E_STORES: readonly E2EStoreKind[] = [postgres, pglite, mariadb];

/**
 * The MongoDB store on the driver double (no MongoDB server runs here; see
 * docs/stores/mongodb.md), given to each queue server as an opened store of
 * its own over the one double, which that server closes; `drop` closes any
 * left open, then clears the double.
 */
const mongodbDouble: E2EStoreKind = {
  label: 'mongodb (driver double)',
  open: async () => {
    const double = createMongoDriverDouble({ replicaSet: 'rs0' });
    const opened: Store[] = [];
    const openAnother = async () => {
      const another = (await mongoStoreOnDouble({}, double)).store;
      opened.push(another);
      return another;
    };
    const drop = async () => {
      await Promise.all(opened.map((each) => each.close()));
      double.databases.clear();
    };
    return { url: 'mongodb://driver-double/', openAnother, drop };
  },
};

const mongodbReal: E2EStoreKind = {
  label: 'mongodb (real)',
  open: async () => freshMongoDatabase(E2E_PREFIX),
  unreachableReason: mongoUnreachableReason,
};

/**
 * The stores a queue server in the test's own process runs on: every one of `E2E_STORES`, the MongoDB
 * driver double, and a real MongoDB where one is reachable.
 */
export const IN_PROCESS_STORES: readonly E2EStoreKind[] = [...E2E_STORES, mongodbDouble, mongodbReal];

/**
 * The stores on a database server of their own, shared by every process and outliving any queue server
 * (the driver double lives in one process, so it cannot be one of them).
 */
export const SERVER_STORES: readonly E2EStoreKind[] = [postgres, mariadb, mongodbReal];

/**
 * The stores several queue servers in the test's own process can share, one after another or at once:
 * every one of `SERVER_STORES`, and the MongoDB driver double, each server given a store object of its
 * own over the one double (see `serverStore`).
 */
export const SHARED_STORES: readonly E2EStoreKind[] = [postgres, mariadb, mongodbDouble, mongodbReal];

/**
 * `describe.each` over store kinds: `title` may name `$label`. A kind that cannot be reached here
 * is registered as skipped, with the reason in its title and printed, never silently passed.
 */
export async function describeEachStore(
  kinds: readonly E2EStoreKind[],
  title: string,
  suite: (kind: E2EStoreKind) => void,
): Promise<void> {
  const rows = await Promise.all(
    kinds.map(async (kind) => ({ ...kind, skipReason: await kind.unreachableReason?.() })),
  );
  const reachable = rows.filter((row) => row.skipReason === undefined);
  const unreachable = rows.filter((row) => row.skipReason !== undefined);
  if (reachable.length > 0) describe.each(reachable)(title, suite);
  for (const row of unreachable) {
    const skipped = `${title.replace('$label', row.label)}: skipped — ${row.skipReason}`;
    console.log(skipped);
    describe.skip(skipped, () => suite(row));
  }
}

/** Every stored job of one type, read from the store itself rather than through a queue server, in id order. */
export async function listStoredJobs(store: Store, name: string): Promise<JobRecord[]> {
  const all: JobRecord[] = [];
  for (;;) {
    const afterId = all.at(-1)?.id;
    const page = await store.listJobs({ name, limit: MAX_BATCH_SIZE, ...(afterId === undefined ? {} : { afterId }) });
    all.push(...page);
    if (page.length < MAX_BATCH_SIZE) return all;
  }
}
