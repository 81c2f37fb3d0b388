import { jobs } from '@workq/schemas';
import {
  type ClientOptions,
  createClient,
  type EnqueueManyOptions,
  type EnqueueOptions,
  type JobHandle,
} from '@workq/sdk';
import { describe, expectTypeOf, it } from 'vitest';

const sdk = createClient({ url: 'http://127.0.0.1:1', jobs });

describe('producer types', () => {
  it('types enqueue payloads and results by the catalog', () => {
    expectTypeOf(sdk.enqueue.imageConvert).parameter(0).toEqualTypeOf<{
      source: string;
      output: string;
      format?: 'jpeg' | 'png' | 'webp' | 'avif' | undefined;
      quality?: number | undefined;
    }>();
    expectTypeOf(sdk.enqueue.imageConvert).returns.resolves.toEqualTypeOf<
      JobHandle<{ bytes: number; width?: number | undefined }>
    >();
    expectTypeOf<Awaited<ReturnType<JobHandle<{ bytes: number }>['result']>>>().toEqualTypeOf<{ bytes: number }>();
    expectTypeOf(sdk.enqueueMany.sendEmail).returns.resolves.toEqualTypeOf<JobHandle<{ messageId: string }>[]>();
  });

  it('takes options for the whole batch and, per job, options of its own', async () => {
    const payloads = [
      { source: 'a.png', output: 'a.webp' },
      { source: 'b.png', output: 'b.webp', quality: 50 },
    ];
    expectTypeOf(sdk.enqueueMany.imageConvert(payloads)).resolves.toEqualTypeOf<
      JobHandle<{ bytes: number; width?: number | undefined }>[]
    >();
    await sdk.enqueueMany.imageConvert(payloads, { priority: 5, leaseMs: 60_000 });
    await sdk.enqueueMany.imageConvert(payloads, {
      priority: 5,
      perJob: [{ idempotencyKey: 'a', delayMs: 1_000 }, undefined],
    });
    await sdk.enqueueMany.imageConvert(payloads, { perJob: payloads.map((p) => ({ idempotencyKey: p.output })) });
    expectTypeOf<EnqueueManyOptions['perJob']>().toEqualTypeOf<readonly (EnqueueOptions | undefined)[] | undefined>();
    const reject = async () => {
      // @ts-expect-error a per-job idempotencyKey is a string
      await sdk.enqueueMany.imageConvert(payloads, { perJob: [{ idempotencyKey: 1 }] });
      // @ts-expect-error perJob holds options, not payloads
      await sdk.enqueueMany.imageConvert(payloads, { perJob: [{ source: 'a.png' }] });
      // @ts-expect-error perJob is an array, one entry per payload
      await sdk.enqueueMany.imageConvert(payloads, { perJob: { idempotencyKey: 'a' } });
    };
    expectTypeOf(reject).toBeFunction();
  });

  it("takes a job's handler time limit, timeoutMs, as an enqueue option, one batch's or each job's", () => {
    expectTypeOf<EnqueueOptions['timeoutMs']>().toEqualTypeOf<number | undefined>();
    const send = async () => {
      await sdk.enqueue.imageConvert({ source: 'a', output: 'b' }, { timeoutMs: 60_000 });
      await sdk.enqueueMany.imageConvert([{ source: 'a', output: 'b' }], {
        timeoutMs: 5_000,
        perJob: [{ timeoutMs: 100 }],
      });
      // @ts-expect-error timeoutMs is a number of milliseconds
      await sdk.enqueue.imageConvert({ source: 'a', output: 'b' }, { timeoutMs: '1m' });
    };
    expectTypeOf(send).toBeFunction();
  });

  it('takes time limits and enqueue retries as client options', () => {
    createClient({ url: 'http://127.0.0.1:1', jobs, timeoutMs: 5_000, enqueueRetries: 0, enqueueBudgetMs: 10_000 });
    expectTypeOf<ClientOptions<typeof jobs>['timeoutMs']>().toEqualTypeOf<number | undefined>();
    // @ts-expect-error timeoutMs is a number of milliseconds
    createClient({ url: 'http://127.0.0.1:1', jobs, timeoutMs: '5s' });
  });

  it('rejects wrong payloads and unknown jobs at compile time', () => {
    const reject = async () => {
      // @ts-expect-error `quality` must be a number
      await sdk.enqueue.imageConvert({ source: 'a', output: 'b', quality: 'high' });
      // @ts-expect-error `output` is required
      await sdk.enqueue.imageConvert({ source: 'a' });
      // @ts-expect-error there is no job named resizeVideo
      await sdk.enqueue.resizeVideo({});
      // @ts-expect-error `format` must be one of the declared formats
      await sdk.enqueueMany.imageConvert([{ source: 'a', output: 'b', format: 'gif' }]);
    };
    expectTypeOf(reject).toBeFunction();
  });
});

describe('consumer types', () => {
  it('hands the handler the current, parsed payload and the job metadata', () => {
    sdk.consume('imageConvert', async (job, ctx) => {
      expectTypeOf(job.payload).toEqualTypeOf<{
        source: string;
        output: string;
        format: 'jpeg' | 'png' | 'webp' | 'avif';
        quality: number;
      }>();
      expectTypeOf(job.attempt).toBeNumber();
      expectTypeOf(job.version).toBeNumber();
      expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
      return { bytes: 1 };
    });
  });

  it('rejects a wrong result type and unknown job names', () => {
    // @ts-expect-error `bytes` must be a number
    sdk.consume('imageConvert', async () => ({ bytes: 'many' }));
    // @ts-expect-error the result misses `messageId`
    sdk.consume('sendEmail', async () => ({}));
    // @ts-expect-error there is no job named resizeVideo
    sdk.consume('resizeVideo', async () => undefined);
  });

  it('types moveTo by the target job', () => {
    sdk.consume('generateReport', async (job, ctx) => {
      await ctx.moveTo('sendEmail', { to: 'a@example.com', subject: job.payload.kind, body: '' });
      // @ts-expect-error sendEmail needs `to`, `subject` and `body`
      await ctx.moveTo('sendEmail', { subject: 'x' });
      // @ts-expect-error there is no job named resizeVideo
      await ctx.moveTo('resizeVideo', {});
      return { url: '', rows: 0 };
    });
  });

  it('types updatePayload by the consumed job’s current payload', () => {
    sdk.consume('imageConvert', async (job, ctx) => {
      await ctx.updatePayload({ ...job.payload, quality: 50 });
      // quality has a default, so the input may leave it out
      await ctx.updatePayload({ source: 'a.png', output: 'b.webp' });
      // @ts-expect-error the current version needs `output`
      await ctx.updatePayload({ source: 'a.png' });
      // @ts-expect-error a sendEmail payload is not an imageConvert payload
      await ctx.updatePayload({ to: 'a@example.com', subject: 's', body: '' });
      return { bytes: 1 };
    });
  });
});
