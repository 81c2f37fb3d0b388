/**
 * The chaos runs' own job catalog: one job type, `chaosJob`, whose payload
 * carries the producer's sequence number, so every job in the store can be
 * traced back to the enqueue that made it.
 */
import { defineCatalog, defineJob } from '@workq/core';
import { z } from 'zod';

/** The lease every chaos job is claimed with: short, so killed and stopped workers' jobs come back soon. */
export const CHAOS_LEASE_MS = 3_000;

export const chaosJobs = defineCatalog({
  chaosJob: defineJob({
    version: 1,
    payload: z.object({
      /** The producer's sequence number, unique per run. */
      seq: z.number().int().nonnegative(),
      /** Whether it was enqueued with an idempotency key. */
      keyed: z.boolean(),
      /** How long the handler works on it, in milliseconds. */
      workMs: z.number().int().nonnegative(),
    }),
    result: z.object({ seq: z.number().int(), attempt: z.number().int(), pid: z.number().int() }),
    // Attempts are spent by kills, not by failures: enough that no job goes dead in a run.
    defaults: { leaseMs: CHAOS_LEASE_MS, maxAttempts: 100, backoff: { type: 'fixed', delayMs: 100 } },
  }),
});

export type ChaosJobs = typeof chaosJobs;
