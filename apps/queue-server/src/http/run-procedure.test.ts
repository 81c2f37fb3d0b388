import { initTRPC, TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ProcedureCall, runProcedure } from './run-procedure.ts';

const t = initTRPC.context<{ caller: string }>().create();

/** Every middleware sees what the one before it passed on: the chain is recorded, and the resolver returns it. */
const seen: string[] = [];
const recorded = t.procedure
  .use(async ({ ctx, input, meta, path, type, next }) => {
    seen.push(`outer ctx=${ctx.caller} input=${String(input)} meta=${JSON.stringify(meta)} ${type} ${path}`);
    const result = await next({ ctx: { role: 'admin' } });
    seen.push(`outer result ok=${result.ok}`);
    return result;
  })
  .meta({ audit: true })
  .input(z.object({ n: z.number().int() }))
  .use(({ ctx, input, next }) => {
    seen.push(`inner ctx=${JSON.stringify(ctx)} input=${JSON.stringify(input)}`);
    if (input.n < 0) throw new Error('negative');
    return next({ input: { n: input.n * 2 } });
  })
  .mutation(({ ctx, input }) => ({ ctx, input }));

const failing = t.procedure
  .use(() => {
    throw new TRPCError({ code: 'FORBIDDEN', message: 'no' });
  })
  .query(() => 'never');

const silent = t.procedure.use((() => undefined) as never).query(() => 'never');

function callOf(input: unknown, type: ProcedureCall['type'] = 'mutation'): ProcedureCall {
  return {
    path: 'x.y',
    type,
    ctx: { caller: 'me' },
    getRawInput: async () => input,
    signal: undefined,
    batchIndex: 0,
  };
}

/** Runs `procedure` both ways: tRPC's own call and `runProcedure`, with what each middleware saw. */
async function bothWays(procedure: Parameters<typeof runProcedure>[0], call: ProcedureCall) {
  const settle = (promise: Promise<unknown>) =>
    promise.then(
      (data) => ({ data }),
      (error: unknown) => ({
        error: error instanceof TRPCError ? `${error.code} ${error.message}` : String(error),
        cause: error instanceof TRPCError ? String(error.cause) : undefined,
      }),
    );
  seen.length = 0;
  const own = { outcome: await settle(procedure(call)), seen: [...seen] };
  seen.length = 0;
  const ours = { outcome: await settle(runProcedure(procedure, call)), seen: [...seen] };
  return { own, ours };
}

describe('runProcedure', () => {
  it('runs the chain as tRPC does: context merged, input parsed and replaced, meta and call passed on', async () => {
    const { own, ours } = await bothWays(recorded, callOf({ n: 2 }));
    expect(ours).toEqual(own);
    expect(ours.outcome).toEqual({ data: { ctx: { caller: 'me', role: 'admin' }, input: { n: 4 } } });
    expect(ours.seen[0]).toBe('outer ctx=me input=undefined meta={"audit":true} mutation x.y');
  });

  it('hands a middleware above a throw below it as a failed result, then throws its TRPCError', async () => {
    const { own, ours } = await bothWays(recorded, callOf({ n: -1 }));
    expect(ours).toEqual(own);
    expect(ours.outcome).toEqual({ error: 'INTERNAL_SERVER_ERROR negative', cause: 'Error: negative' });
    expect(ours.seen).toContain('outer result ok=false');
  });

  it('refuses input its parser refuses as BAD_REQUEST, and passes a TRPCError thrown by a middleware as it is', async () => {
    const refused = await bothWays(recorded, callOf({ n: 1.5 }));
    expect(refused.ours).toEqual(refused.own);
    expect(refused.ours.outcome).toMatchObject({ error: expect.stringMatching(/^BAD_REQUEST /) });
    const forbidden = await bothWays(failing, callOf(undefined, 'query'));
    expect(forbidden.ours).toEqual(forbidden.own);
    expect(forbidden.ours.outcome).toMatchObject({ error: 'FORBIDDEN no' });
  });

  it('fails a chain whose middleware returns nothing, as tRPC does', async () => {
    const { own, ours } = await bothWays(silent, callOf(undefined, 'query'));
    expect(ours).toEqual(own);
    expect(ours.outcome).toMatchObject({ error: expect.stringMatching(/^INTERNAL_SERVER_ERROR No result/) });
  });
});
