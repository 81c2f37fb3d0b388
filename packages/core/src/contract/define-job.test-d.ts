import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineCatalog } from './define-catalog.ts';
import { defineJob } from './define-job.ts';
import type { PayloadInput, PayloadOutput, ResultOutput } from './types.ts';

const jobs = defineCatalog({
  imageConvert: defineJob({
    version: 2,
    payload: z.object({ source: z.string(), output: z.string(), quality: z.number().int().default(80) }),
    result: z.object({ bytes: z.number() }),
    previous: {
      1: {
        payload: z.object({ source: z.string(), output: z.string() }),
        upgrade: (p) => {
          expectTypeOf(p).toEqualTypeOf<{ source: string; output: string }>();
          return { ...p, quality: 80 };
        },
      },
    },
  }),
  ping: defineJob({ version: 1, payload: z.object({ at: z.number() }) }),
});

describe('job contract types', () => {
  it('derives payload input and output per job', () => {
    expectTypeOf<PayloadInput<typeof jobs, 'imageConvert'>>().toEqualTypeOf<{
      source: string;
      output: string;
      quality?: number | undefined;
    }>();
    expectTypeOf<PayloadOutput<typeof jobs, 'imageConvert'>>().toEqualTypeOf<{
      source: string;
      output: string;
      quality: number;
    }>();
  });

  it('derives the result type, undefined without a result schema', () => {
    expectTypeOf<ResultOutput<typeof jobs, 'imageConvert'>>().toEqualTypeOf<{ bytes: number }>();
    expectTypeOf<ResultOutput<typeof jobs, 'ping'>>().toEqualTypeOf<undefined>();
  });

  it('checks that an upgrade produces the next version', () => {
    defineJob({
      version: 2,
      payload: z.object({ a: z.string(), b: z.number() }),
      // @ts-expect-error the upgrade omits the required field `b` of version 2
      previous: {
        1: { payload: z.object({ a: z.string() }), upgrade: (p) => ({ a: p.a }) },
      },
    });
  });

  it('chains upgrades through every older version', () => {
    defineJob({
      version: 3,
      payload: z.object({ a: z.string(), b: z.number(), c: z.boolean() }),
      previous: {
        1: { payload: z.object({ a: z.string() }), upgrade: (p) => ({ a: p.a, b: 1 }) },
        2: { payload: z.object({ a: z.string(), b: z.number() }), upgrade: (p) => ({ ...p, c: true }) },
      },
    });
    defineJob({
      version: 3,
      payload: z.object({ a: z.string(), b: z.number(), c: z.boolean() }),
      // @ts-expect-error v1's upgrade must produce v2's shape, which needs `b`
      previous: {
        1: { payload: z.object({ a: z.string() }), upgrade: (p) => ({ a: p.a, c: true }) },
        2: { payload: z.object({ a: z.string(), b: z.number() }), upgrade: (p) => ({ ...p, c: true }) },
      },
    });
  });

  it('takes a time limit in milliseconds, and nothing else', () => {
    expectTypeOf(defineJob({ version: 1, payload: z.object({}), timeoutMs: 60_000 }).timeoutMs).toEqualTypeOf<
      number | undefined
    >();
    // @ts-expect-error a time limit is a number of milliseconds
    defineJob({ version: 1, payload: z.object({}), timeoutMs: '1m' });
  });
});
