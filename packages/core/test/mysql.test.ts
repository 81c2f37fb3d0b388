import { freshMysqlDatabase, mysqlUnreachableReason } from '@workq/test-support';
import { createMysqlStore } from '../src/stores/mysql/index.ts';
import { describeStore, type StoreHarness } from './conformance/describe-store.ts';

/**
 * Each run gets its own database, dropped when the suite ends; each `open()` has its own pool of two connections:
 * the suite keeps every store it opens until it ends, and the server's connection limit is shared with other tests.
 */
async function makeMysqlHarness(): Promise<StoreHarness> {
  const { url, drop } = await freshMysqlDatabase();
  return { separateConnections: true, open: () => createMysqlStore({ url, poolSize: 2 }), close: drop };
}

const skipReason = await mysqlUnreachableReason();
describeStore('mysql', makeMysqlHarness, skipReason === undefined ? {} : { skipReason });
