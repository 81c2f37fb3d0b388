import { MAX_BATCH_SIZE } from '@workq/core';
import type { JobRecord, Store } from '@workq/core/engine';
import {
  freshMongoDatabase,
  freshMysqlDatabase,
  freshPostgresSchema,
  mongoUnreachableReason,
  mysqlUnreachableReason,
  startMongoWireDouble,
  uniqueName,
} from '@workq/test-support';
import { describe } from 'vitest';

/** A store one test file has to itself: the URL a queue server opens, and how to remove it afterwards. */
export interface FreshStore {
  url: string;
  drop: () => Promise<void>;
  /**
   * Present for a store whose clients find its members by the addresses they announce (a MongoDB replica
   * set): makes it announce `hostPort` instead, as one reached through a proxy must be configured to.
   */
  announce?: (hostPort: string) => void;
}

/** What to give one more queue server in this process for `target`'s data: every kind is reached by its URL. */
export async function serverStore(target: FreshStore): Promise<string> {
  return target.url;
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
 * The MongoDB store through the real driver on the wire double, a fake
 * primary on 127.0.0.1 that lives as long as the test process (no MongoDB
 * server runs here; see docs/stores/mongodb.md): each `open` starts one and
 * names a fresh database on it, so queue servers in this process and child
 * processes alike reach it by URL; `drop` stops it.
 */
const mongodbWire: E2EStoreKind = {
  label: 'mongodb (wire double)',
  open: async () => {
    const double = await startMongoWireDouble({ database: uniqueName(E2E_PREFIX) });
    return { url: double.url, drop: () => double.close(), announce: (hostPort) => double.announce(hostPort) };
  },
};

const mongodbReal: E2EStoreKind = {
  label: 'mongodb (real)',
  open: async () => freshMongoDatabase(E2E_PREFIX),
  unreachableReason: mongoUnreachableReason,
};

/**
 * The stores a queue server in the test's own process runs on: every one of `E2E_STORES`, the MongoDB
 * wire double, and a real MongoDB where one is reachable.
 */
export const IN_PROCESS_STORES: readonly E2EStoreKind[] = [...E2E_STORES, mongodbWire, mongodbReal];

/**
 * The stores on a database server of their own, shared by every process and outliving any queue server
 * (the wire double serves every process over TCP for as long as the test process lives).
 */
export const SERVER_STORES: readonly E2EStoreKind[] = [postgres, mariadb, mongodbWire, mongodbReal];

/** The stores several queue servers in the test's own process can share, one after another or at once. */
export const SHARED_STORES: readonly E2EStoreKind[] = SERVER_STORES;

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
