import { type MongoWireDouble, startMongoWireDouble } from '@workq/test-support';
import type { Store } from '../../src/engine/store.ts';
import { createMongoStore } from '../../src/stores/mongodb/index.ts';

/**
 * Runs `body` with a MongoDB store (without a notifier) over a fake primary of its own holding `dbName`, and
 * closes the store and the primary after it, however it ends.
 */
export async function withWireStore<T>(
  dbName: string,
  body: (wire: MongoWireDouble, store: Store) => Promise<T>,
): Promise<T> {
  const wire = await startMongoWireDouble({ database: dbName });
  try {
    const store = await createMongoStore({ url: wire.url, dbName, notify: false });
    try {
      return await body(wire, store);
    } finally {
      await store.close();
    }
  } finally {
    await wire.close();
  }
}
