import { MAX_BATCH_SIZE, WorkqError } from '@workq/core';
import type { SchemaRegistration } from '@workq/core/engine';
import { z } from 'zod';
import { hasScope, type Principal } from '../auth.ts';
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
    .mutation(async ({ ctx, input }) => {
      const { principal } = ctx;
      const permitted = input.schemas.filter(({ name }) => mayUse(principal, name));
      const refused = input.schemas.find((schema) => !permitted.includes(schema));
      if (refused && permitted.length === 0) {
        throw new WorkqError(
          'FORBIDDEN',
          `This token may not register schemas for "${refused.name}": it needs produce:${refused.name}, consume:${refused.name} or register:${refused.name}.`,
        );
      }
      const writable = permitted.filter(({ name }) => hasScope(principal, 'register', name));
      const presented = permitted.filter((schema) => !writable.includes(schema));
      const confirmed = await ctx.services.registry.confirm(presented);
      if (confirmed.unregistered.length > 0) throw cannotRegister(confirmed.unregistered);
      const entries = [...confirmed.registered, ...(await ctx.services.registry.register(writable))];
      return entries.map(({ name, version: v, fingerprint }) => ({ name, version: v, fingerprint }));
    }),

  /** The registered schemas of the job types this token may produce, consume or register (`admin`: all). */
  list: authedProcedure.input(z.object({ name: jobName.optional() }).optional()).query(async ({ ctx, input }) => {
    const entries = await ctx.services.registry.list(input?.name);
    return entries.filter(({ name }) => mayUse(ctx.principal, name));
  }),
});

/** Whether the token may produce, consume or register jobs of `name`. */
function mayUse(principal: Principal, name: string): boolean {
  return (['produce', 'consume', 'register'] as const).some((kind) => hasScope(principal, kind, name));
}

/** `FORBIDDEN` for versions a produce/consume token presented that nobody with `register:` has registered yet. */
function cannotRegister(unregistered: readonly SchemaRegistration[]): WorkqError {
  const versions = unregistered.map(({ name, version }) => `"${name}" v${version}`).join(', ');
  const names = [...new Set(unregistered.map(({ name }) => name))];
  return new WorkqError(
    'FORBIDDEN',
    `${versions} ${unregistered.length === 1 ? 'is' : 'are'} not registered yet, and registering a new version takes the scope ${names.map((name) => `"register:${name}"`).join(', ')} (or "register:*"), which this token lacks. ` +
      'Deploy the catalog first with a service whose token holds it (a worker or backend, never a browser), or start the server with the catalog (startServer({ jobs })); then this token can use it.',
    { details: { unregistered: unregistered.map(({ name, version }) => ({ name, version })) } },
  );
}
