import type { MongoStoreOptions } from '../../src/stores/mongodb/index.ts';

/**
 * How the conformance suite opens MongoDB stores, on a real server and on
 * the driver double alike. Its manual clock dates finished jobs from January
 * 2026, so the history TTL is the longest a TTL index takes (about 68
 * years): the default 7 days would let the TTL monitor delete the suite's
 * history while it runs.
 */
export const CONFORMANCE_STORE_OPTIONS = {
  historyRetentionMs: 2_147_483_647_000,
} as const satisfies Partial<MongoStoreOptions>;
