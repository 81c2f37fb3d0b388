import { MAX_BATCH_SIZE } from '@workq/core';
import { z } from 'zod';
import { listSchemas, registerSchemas } from '../app/schemas.ts';
import { jobName, version } from './inputs.ts';
import { authedProcedure, router } from './trpc.ts';

export const schemasRouter = router({
  /**
   * Registers a catalog's payload schemas (JSON Schema): those of the job
   * types this token may produce, consume or register; the rest of the
   * catalog is skipped, so a token scoped to one job can still use a client
   * built on the whole catalog. A (job, version) not yet registered takes
   * `register:<job>` (or `register:*`, or `admin`): a token that may only
   * produce or consume the type may present the schema registered, which
   * writes nothing, and is refused with `FORBIDDEN` for a version not yet
   * registered, so no browser token can claim a version before the real
   * deploy does. Refused with `FORBIDDEN` too when the token may use none of
   * the types, and with `CONFLICT` when a (job, version) is registered with a
   * different schema. Resolves to the entries registered.
   */
  register: authedProcedure
    .input(
      z.object({
        schemas: z
          .array(z.object({ name: jobName, version, jsonSchema: z.record(z.string(), z.unknown()) }))
          .max(MAX_BATCH_SIZE),
      }),
    )
    .mutation(({ ctx, input }) => registerSchemas(ctx.services, ctx.principal, input.schemas)),

  /** The registered schemas of the job types this token may produce, consume or register (`admin`: all). */
  list: authedProcedure
    .input(z.object({ name: jobName.optional() }).optional())
    .query(({ ctx, input }) => listSchemas(ctx.services, ctx.principal, input?.name)),
});
