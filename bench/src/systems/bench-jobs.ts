import { defineCatalog, defineJob } from '@workq/core';
import { z } from 'zod';

/** The one job type every workq scenario uses: a no-op with a sequence number. */
export const benchJobs = defineCatalog({
  benchNoop: defineJob({
    version: 1,
    payload: z.object({ n: z.number().int().nonnegative() }),
    defaults: { maxAttempts: 5, leaseMs: 30_000 },
  }),
  /** A flow's parent (the flows scenarios): it reads its children's results. */
  benchParent: defineJob({
    version: 1,
    payload: z.object({ p: z.number().int().nonnegative() }),
    defaults: { maxAttempts: 5, leaseMs: 30_000 },
  }),
  /** A flow's child: its result is its own payload, which its parent checks. */
  benchChild: defineJob({
    version: 1,
    payload: z.object({ p: z.number().int().nonnegative(), c: z.number().int().nonnegative() }),
    result: z.object({ p: z.number().int(), c: z.number().int() }),
    defaults: { maxAttempts: 5, leaseMs: 30_000 },
  }),
});

export const BENCH_JOB = 'benchNoop';

/**
 * A second type on the same store, never given limits: its claims are timed in turn with the limited claims of
 * `BENCH_JOB`, as the plain claims they are compared with (core systems only, which need no catalog entry).
 */
export const PLAIN_TWIN_JOB = 'benchNoopPlainTwin';
