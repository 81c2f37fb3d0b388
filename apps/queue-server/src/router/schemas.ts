import { MAX_BATCH_SIZE, WorkqError } from '@workq/core';
import { z } from 'zod';
import { hasScope } from '../auth.ts';
import { jobName, version } from './inputs.ts';
import { authedProcedure, router } from './trpc.ts';

export const schemasRouter = router({
  /**
   * Registers a catalog's payload schemas (JSON Schema): those of the job
   * types this token may produce or consume; the rest of the catalog is
   * skipped, so a token scoped to one job can still use a client built on the
   * whole catalog. Refused with `FORBIDDEN` when the token may use none of
   * them, and with `CONFLICT` when a (job, version) is registered with a
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
    .mutation(async ({ ctx, input }) => {
      const permitted = input.schemas.filter(
        ({ name }) => hasScope(ctx.principal, 'produce', name) || hasScope(ctx.principal, 'consume', name),
      );
      const refused = input.schemas.find((schema) => !permitted.includes(schema));
      if (refused && permitted.length === 0) {
        throw new WorkqError(
          'FORBIDDEN',
          `This token may not register schemas for "${refused.name}": it needs produce:${refused.name} or consume:${refused.name}.`,
        );
      }
      const entries = await ctx.services.registry.register(permitted);
      return entries.map(({ name, version: v, fingerprint }) => ({ name, version: v, fingerprint }));
    }),

  list: authedProcedure
    .input(z.object({ name: jobName.optional() }).optional())
    .query(({ ctx, input }) => ctx.services.registry.list(input?.name)),
});
