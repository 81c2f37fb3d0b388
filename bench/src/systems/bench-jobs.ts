import { defineCatalog, defineJob } from '@workq/core';
import { z } from 'zod';

/** The one job type every workq scenario uses: a no-op with a sequence number. */
export const benchJobs = defineCatalog({
  benchNoop: defineJob({
    version: 1,
    payload: z.object({ n: z.number().int().nonnegative() }),
    defaults: { maxAttempts: 5, leaseMs: 30_000 },
  }),
});

export const BENCH_JOB = 'benchNoop';
