import { jobs } from '@workq/schemas';
import {
  createClient,
  type DebounceMode,
  type DebounceOptions,
  type EnqueueOptions,
  type JobStatus,
  type MoveToOptions,
} from '@workq/sdk';
import { describe, expectTypeOf, it } from 'vitest';

const sdk = createClient({ url: 'http://127.0.0.1:1', jobs });
const email = { to: 'a@example.com', subject: 's', body: 'b' };

describe('deduplication options', () => {
  it('takes idempotencyTtlMs and debounce on enqueue and enqueueMany, per batch and per job', async () => {
    expectTypeOf<EnqueueOptions['idempotencyTtlMs']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<EnqueueOptions['debounce']>().toEqualTypeOf<DebounceOptions | undefined>();
    expectTypeOf<DebounceOptions>().toEqualTypeOf<{ key: string; delayMs: number; mode?: DebounceMode | undefined }>();
    await sdk.enqueue.sendEmail(email, { idempotencyKey: 'k', idempotencyTtlMs: 60_000 });
    await sdk.enqueue.sendEmail(email, { debounce: { key: 'user-1', delayMs: 5_000 } });
    await sdk.enqueueMany.sendEmail([email, email], { debounce: { key: 'user-1', delayMs: 0 } });
    await sdk.enqueueMany.sendEmail([email], { perJob: [{ debounce: { key: 'user-2', delayMs: 10 } }] });
    const reject = async () => {
      // @ts-expect-error debounce needs a delay
      await sdk.enqueue.sendEmail(email, { debounce: { key: 'user-1' } });
      // @ts-expect-error the debounce key is a string
      await sdk.enqueue.sendEmail(email, { debounce: { key: 1, delayMs: 10 } });
      // @ts-expect-error idempotencyTtlMs is a number of milliseconds
      await sdk.enqueue.sendEmail(email, { idempotencyKey: 'k', idempotencyTtlMs: '1m' });
    };
    expectTypeOf(reject).toBeFunction();
  });

  it('takes idempotencyUntil and debounce.mode, each one of its values', async () => {
    expectTypeOf<EnqueueOptions['idempotencyUntil']>().toEqualTypeOf<'pruned' | 'finished' | undefined>();
    expectTypeOf<DebounceMode>().toEqualTypeOf<'replace' | 'preserveRunAt' | 'keepFirst'>();
    await sdk.enqueue.sendEmail(email, { idempotencyKey: 'k', idempotencyUntil: 'finished' });
    await sdk.enqueue.sendEmail(email, { idempotencyKey: 'k', idempotencyUntil: 'pruned', idempotencyTtlMs: 1000 });
    await sdk.enqueue.sendEmail(email, { debounce: { key: 'u', delayMs: 10, mode: 'preserveRunAt' } });
    await sdk.enqueueMany.sendEmail([email], { perJob: [{ debounce: { key: 'u', delayMs: 10, mode: 'keepFirst' } }] });
    const reject = async () => {
      // @ts-expect-error no such debounce mode
      await sdk.enqueue.sendEmail(email, { debounce: { key: 'u', delayMs: 10, mode: 'unsafeDedupe' } });
      // @ts-expect-error idempotencyUntil is 'pruned' or 'finished'
      await sdk.enqueue.sendEmail(email, { idempotencyKey: 'k', idempotencyUntil: 'completed' });
    };
    expectTypeOf(reject).toBeFunction();
    expectTypeOf<JobStatus['idempotencyUntil']>().toEqualTypeOf<'finished' | undefined>();
  });

  it('shows the keys on a job’s status', () => {
    expectTypeOf<JobStatus['debounceKey']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<JobStatus['idempotencyExpiresAt']>().toEqualTypeOf<Date | undefined>();
  });

  it('leaves debounce and idempotencyTtlMs out of moveTo, which makes the next job as the current one ends', () => {
    expectTypeOf<MoveToOptions>().not.toHaveProperty('debounce');
    expectTypeOf<MoveToOptions>().not.toHaveProperty('idempotencyTtlMs');
    expectTypeOf<MoveToOptions>().not.toHaveProperty('idempotencyUntil');
    sdk.consume('imageConvert', async (_job, ctx) => {
      await ctx.moveTo('sendEmail', email, { idempotencyKey: 'next' });
      // @ts-expect-error moveTo takes no debounce
      await ctx.moveTo('sendEmail', email, { debounce: { key: 'k', delayMs: 1 } });
      return { bytes: 1 };
    });
  });
});
