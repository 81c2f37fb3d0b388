import { WorkqError } from '@workq/sdk';
import { type CommandContext, noArguments, UsageError, wholeNumber } from '../command.ts';
import { json, table } from '../output.ts';

/** `workq schemas list [--name <type>]`: the registered payload schema versions, with their fingerprints. */
async function list(ctx: CommandContext): Promise<void> {
  noArguments(ctx, 'schemas list');
  const schemas = await ctx.admin.schemas(ctx.options.name);
  if (ctx.json) return ctx.out(json(schemas));
  ctx.out(
    table(
      ['JOB', 'VERSION', 'FINGERPRINT', 'REGISTERED'],
      schemas.map((s) => [s.name, s.version, s.fingerprint.slice(0, 12), s.registeredAt]),
    ),
  );
}

/**
 * `workq schemas remove <type> <version>`: removes a registered schema version on every server, so it can be
 * registered again (e.g. after someone registered it before the real deploy). Jobs of that version stay.
 */
async function remove(ctx: CommandContext): Promise<void> {
  const [name, versionText, extra] = ctx.positionals;
  if (!name || versionText === undefined || extra !== undefined) {
    throw new UsageError(
      'workq schemas remove takes a job type and a version, e.g. "workq schemas remove sendEmail 3".',
    );
  }
  const version = wholeNumber(versionText, 'version', 1, 1_000_000) as number;
  if (!(await ctx.admin.removeSchema(name, version))) {
    throw new WorkqError('NOT_FOUND', `No schema is registered for "${name}" v${version}.`);
  }
  ctx.out(ctx.json ? json({ name, version, removed: true }) : `removed the schema of ${name} v${version}\n`);
}

/** The `workq schemas` subcommands that talk to a server, by name (check and snapshot work on files). */
export const SCHEMA_COMMANDS = { list, remove } as const;
