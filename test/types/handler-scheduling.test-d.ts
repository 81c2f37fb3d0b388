import { defineCatalog, defineJob } from '@workq/core';
import { createClient, type Delayed, type RateLimited } from '@workq/sdk';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

const jobs = defineCatalog({
  callApi: defineJob({
    version: 1,
    payload: z.object({ url: z.string() }),
    result: z.object({ status: z.number() }),
  }),
});

const sdk = createClient({ url: 'http://127.0.0.1:1', jobs });

describe('handler-driven scheduling types', () => {
  it('types what ctx.delay, ctx.retryAt and ctx.rateLimited resolve to, for the handler to return', () => {
    sdk.consume('callApi', async (job, ctx) => {
      expectTypeOf(ctx.delay).parameters.toEqualTypeOf<[ms: number]>();
      expectTypeOf(ctx.retryAt).parameters.toEqualTypeOf<[date: Date]>();
      expectTypeOf(ctx.rateLimited).parameters.toEqualTypeOf<[ms: number]>();
      if (job.payload.url === 'later') {
        const delayed = ctx.delay(60_000);
        expectTypeOf(delayed).resolves.toEqualTypeOf<Delayed>();
        return delayed;
      }
      if (job.payload.url === 'tomorrow') return ctx.retryAt(new Date(Date.now() + 86_400_000));
      if (job.payload.url === '429') {
        const limited = ctx.rateLimited(30_000);
        expectTypeOf(limited).resolves.toEqualTypeOf<RateLimited>();
        return limited;
      }
      return { status: 200 };
    });
  });

  it('rejects wrong argument types, and still checks the handler’s result beside them', () => {
    const reject = () => {
      sdk.consume('callApi', async (_job, ctx) => {
        // @ts-expect-error a delay is a number of milliseconds
        await ctx.delay('1 minute');
        // @ts-expect-error a delay takes one argument
        await ctx.delay();
        // @ts-expect-error retryAt takes a Date, not epoch milliseconds
        await ctx.retryAt(Date.now() + 1_000);
        // @ts-expect-error retryAt takes a Date, not a string
        await ctx.retryAt('2030-01-01');
        // @ts-expect-error a hold is a number of milliseconds
        await ctx.rateLimited({ ms: 1_000 });
        return { status: 200 };
      });
      // @ts-expect-error `status` must be a number
      sdk.consume('callApi', async (_job, ctx) => (Math.random() > 0.5 ? { status: 'ok' } : ctx.delay(1_000)));
      // @ts-expect-error a delay's promise is returned, not a bare number
      sdk.consume('callApi', async () => 1_000);
    };
    expectTypeOf(reject).toBeFunction();
  });
});
