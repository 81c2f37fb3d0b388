import { z } from 'zod';
import { removeSchema } from '../app/schemas.ts';
import { jobName, version } from './inputs.ts';
import { adminProcedure } from './scoped.ts';

/** The schema registry, for operators: what a token with only `register:` or produce/consume may not do. */
export const schemaProcedures = {
  /**
   * Removes the registered payload schema of one (job, version) from the
   * store; resolves to whether one was registered. This server forgets its
   * entry and validator at once, and tells the others over the wake-up bus
   * (servers on a store without a notifier hold theirs until they restart).
   * Afterwards the version is free: the next service holding `register:<job>`
   * registers its schema for it (e.g. the real deploy, after a squatter), and
   * until then payloads of that version are refused (`UNSUPPORTED_VERSION`,
   * or `UNKNOWN_JOB` when no version of the type is left), except on a server
   * started with a catalog that declares the version, which checks them
   * against that catalog.
   *
   * Jobs of that version already in the store are left as they are, neither
   * deleted nor failed: they wait, and a consumer whose catalog declares the
   * version claims them and parses each payload against its own schema (a
   * payload that does not parse ends the job dead, as any invalid payload
   * does). Cancel them first if none should run.
   */
  removeSchema: adminProcedure
    .input(z.object({ name: jobName, version }))
    .mutation(({ ctx, input }) => removeSchema(ctx.services, input.name, input.version)),
};
