import { jobs } from '@workq/schemas';
import { createClient, type JobHandle } from '@workq/sdk';
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
