import { defineJob, type JobDefaults, type JobRetention } from '@workq/core';
import { jobs } from '@workq/schemas';
import { createClient, type EnqueueOptions } from '@workq/sdk';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

const sdk = createClient({ url: 'http://127.0.0.1:1', jobs });
const email = { to: 'a@example.com', subject: 's', body: 'b' };

describe('retention per job and per type', () => {
  it('takes completedMs and deadMs, each optional, on enqueue, enqueueMany and a type’s defaults', async () => {
    expectTypeOf<EnqueueOptions['retention']>().toEqualTypeOf<JobRetention | undefined>();
    expectTypeOf<JobDefaults['retention']>().toEqualTypeOf<JobRetention | undefined>();
    expectTypeOf<JobRetention>().toEqualTypeOf<{ completedMs?: number | undefined; deadMs?: number | undefined }>();
    await sdk.enqueue.sendEmail(email, { retention: { completedMs: 3_600_000 } });
    await sdk.enqueueMany.sendEmail([email, email], { retention: { deadMs: 0 } });
    defineJob({ version: 1, payload: z.object({}), defaults: { retention: { completedMs: 0, deadMs: 86_400_000 } } });
    const reject = async () => {
      // @ts-expect-error a retention is in milliseconds
      await sdk.enqueue.sendEmail(email, { retention: { completedMs: '1h' } });
      // @ts-expect-error a retention names ages only: no counts
      await sdk.enqueue.sendEmail(email, { retention: { completedCount: 100 } });
      // @ts-expect-error a retention is an object, not a number
      defineJob({ version: 1, payload: z.object({}), defaults: { retention: 60_000 } });
    };
    expectTypeOf(reject).toBeFunction();
  });
});
