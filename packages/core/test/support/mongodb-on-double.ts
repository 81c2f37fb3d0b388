import type { MongoClient } from 'mongodb';
import { afterEach } from 'vitest';
import { createEngine } from '../../src/engine/engine.ts';
import type { Store } from '../../src/engine/store.ts';
import { createMongoStore, type MongoStoreOptions } from '../../src/stores/mongodb/index.ts';
import { ManualClock } from './manual-clock.ts';
import { createMongoDriverDouble, type MongoDriverDouble, type MongoDriverDoubleOptions } from './mongodb-double.ts';

/** The database the store tests on the driver double use. */
export const DB = 'workq_store_test';

/**
 * A MongoDB store on a driver double that answers as a replica set's member
 * (change-stream wake-ups, transactions, retried writes), for tests that run
 * a whole queue server on it; the caller closes the store. The double is a
 * fresh one unless `double` is given: then the store is another over the same
 * data, as another connection to one replica set would be.
 */
export async function mongoStoreOnDouble(
  options: Partial<MongoStoreOptions> = {},
  double: MongoDriverDouble = createMongoDriverDouble({ replicaSet: 'rs0' }),
) {
  const client = double.client as unknown as MongoClient;
  const store = await createMongoStore({ client, dbName: DB, ...options });
  return { double, store };
}

/**
 * Registers the clean-up of a test file's stores (call it at the file's top
 * level) and returns how to open one: a MongoDB store on the driver double
 * (a fresh one, or `double`), with an engine on a manual clock.
 */
export function storesOnDouble() {
  const opened: Store[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });
  return async function openOnDouble(
    options: Partial<MongoStoreOptions> = {},
    doubleOptions: MongoDriverDoubleOptions = {},
    double: MongoDriverDouble = createMongoDriverDouble(doubleOptions),
  ) {
    const client = double.client as unknown as MongoClient;
    const store = await createMongoStore({ client, dbName: DB, notify: false, ...options });
    opened.push(store);
    const clock = new ManualClock();
    return { double, store, clock, engine: createEngine({ store, clock, leaseSweepIntervalMs: 0 }) };
  };
}
