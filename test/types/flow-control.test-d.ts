import { jobs } from '@workq/schemas';
import { createClient, type JobState, type QueueLimits, type QueueListing } from '@workq/sdk';
import { describe, expectTypeOf, it } from 'vitest';

const sdk = createClient({ url: 'http://127.0.0.1:1', jobs });

describe('flow-control types: pause, limits, queues and the enqueue option group', () => {
  it('types pause, resume and setLimits, where null clears a limit', () => {
    expectTypeOf(sdk.admin.pause).toEqualTypeOf<(name: string) => Promise<void>>();
    expectTypeOf(sdk.admin.resume).toEqualTypeOf<(name: string) => Promise<void>>();
    expectTypeOf(sdk.admin.setLimits).returns.resolves.toEqualTypeOf<QueueLimits>();
    void sdk.admin.setLimits('imageConvert', {
      concurrency: 20,
      rateLimit: { max: 100, perMs: 1000 },
      groupConcurrency: 1,
    });
    void sdk.admin.setLimits('imageConvert', { concurrency: null, rateLimit: null });
    // @ts-expect-error a rate limit has both max and perMs
    void sdk.admin.setLimits('imageConvert', { rateLimit: { max: 100 } });
    // @ts-expect-error concurrency is a number
    void sdk.admin.setLimits('imageConvert', { concurrency: '20' });
  });

  it("types groupOrder: 'strict' or null, shown with the limits", () => {
    void sdk.admin.setLimits('imageConvert', { groupConcurrency: 1, groupOrder: 'strict' });
    void sdk.admin.setLimits('imageConvert', { groupOrder: null });
    // @ts-expect-error strict is the one group order
    void sdk.admin.setLimits('imageConvert', { groupOrder: 'fifo' });
    expectTypeOf<QueueLimits['groupOrder']>().toEqualTypeOf<'strict' | null>();
  });

  it('types each queue with its pause, its hold while one runs, limits and counts by state and version', () => {
    expectTypeOf(sdk.admin.queues).returns.resolves.toEqualTypeOf<QueueListing[]>();
    expectTypeOf<QueueListing>().toEqualTypeOf<{
      name: string;
      paused: boolean;
      heldUntil?: Date;
      limits: QueueLimits;
      counts: Record<JobState, number>;
      versions: { version: number; counts: Record<JobState, number> }[];
    }>();
  });

  it('takes a group as an enqueue option', () => {
    void sdk.enqueue.sendEmail({ to: 'a@example.com', subject: 's', body: 'b' }, { group: 'tenant-1' });
    // @ts-expect-error a group is a string
    void sdk.enqueue.sendEmail({ to: 'a@example.com', subject: 's', body: 'b' }, { group: 1 });
  });
});
