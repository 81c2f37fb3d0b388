import { PGlite } from '@electric-sql/pglite';
import { openPgliteStore } from '../src/stores/postgres/create-store.ts';
import { describeStore, type StoreHarness } from './conformance/describe-store.ts';

/**
 * One in-memory PGlite instance; every `open()` is a store on it (the same
 * database, as separate stores in one process would see it). Closing a store
 * leaves the instance open; the harness closes it.
 */
async function makePgliteHarness(): Promise<StoreHarness> {
  const db = await PGlite.create();
  return {
    separateConnections: false,
    open: () => openPgliteStore(db, { ownsDb: false }),
    async close() {
      await db.close();
    },
  };
}

describeStore('pglite', makePgliteHarness);
