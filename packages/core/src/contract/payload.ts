import { z } from 'zod';
import { WorkqError } from '../errors.ts';
import type { AnyJobDefinition } from './types.ts';

/** Parses `value` with `schema`, or fails with a `VALIDATION` error listing every issue. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new WorkqError('VALIDATION', `${what} is invalid:\n${z.prettifyError(parsed.error)}`, {
    details: parsed.error.issues.map((issue) => ({ path: issue.path.map(String), message: issue.message })),
  });
}

/** The payload schema of one version of a job, or an `UNSUPPORTED_VERSION` error. */
export function payloadSchemaOf(name: string, definition: AnyJobDefinition, version: number): z.ZodType {
  if (version === definition.version) return definition.payload;
  const older = (definition.previous as Record<number, { payload: z.ZodType } | undefined>)[version];
  if (older) return older.payload;
  throw new WorkqError(
    'UNSUPPORTED_VERSION',
    `Job "${name}" has no version ${version}; this catalog reads versions ${definition.versions.join(', ')}.`,
  );
}

/**
 * Turns a stored payload of any supported version into the current version's
 * parsed output, running each `upgrade` along the way.
 */
export function upgradePayload(name: string, definition: AnyJobDefinition, version: number, payload: unknown): unknown {
  let value = parseWith(payloadSchemaOf(name, definition, version), payload, `Payload of "${name}" v${version}`);
  for (let from = version; from < definition.version; from++) {
    const step = (definition.previous as Record<number, { upgrade: (p: unknown) => unknown }>)[from];
    if (!step) throw new WorkqError('UNSUPPORTED_VERSION', `Job "${name}" has no upgrade from version ${from}.`);
    const to = from + 1;
    value = parseWith(
      payloadSchemaOf(name, definition, to),
      step.upgrade(value),
      `Upgrade of "${name}" v${from} to v${to}`,
    );
  }
  return value;
}
