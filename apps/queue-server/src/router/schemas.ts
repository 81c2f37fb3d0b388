import { WorkqError } from '@workq/core';
import { z } from 'zod';
import { hasScope } from '../auth.ts';
import { jobName, version } from './inputs.ts';
import { authedProcedure, router } from './trpc.ts';

export const schemasRouter = router({
  /**
   * Registers a catalog's payload schemas (JSON Schema). Refused with
   * `CONFLICT` when a (job, version) is registered with a different schema.
   */
  register: authedProcedure
    .input(
      z.object({
        schemas: z.array(z.object({ name: jobName, version, jsonSchema: z.record(z.string(), z.unknown()) })).max(1000),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      for (const { name } of input.schemas) {
        if (!hasScope(ctx.principal, 'produce', name) && !hasScope(ctx.principal, 'consume', name)) {
          throw new WorkqError(
            'FORBIDDEN',
            `This token may not register schemas for "${name}": it needs produce:${name} or consume:${name}.`,
          );
        }
      }
      const entries = await ctx.services.registry.register(input.schemas);
      return entries.map(({ name, version: v, fingerprint }) => ({ name, version: v, fingerprint }));
    }),

  list: authedProcedure
    .input(z.object({ name: jobName.optional() }).optional())
    .query(({ ctx, input }) => ctx.services.registry.list(input?.name)),
});
