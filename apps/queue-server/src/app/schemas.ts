import { WorkqError } from '@workq/core';
import type { SchemaRegistration } from '@workq/core/engine';
import { hasAnyScope, hasScope, type Principal } from '../auth.ts';
import type { ServerServices } from './services.ts';

/** A payload schema as a client registers it: one (job, version) and its JSON Schema. */
export interface SchemaInput {
  name: string;
  version: number;
  jsonSchema: Record<string, unknown>;
}

/** What a token may do with a job type's schemas: see them and present them, if it may produce, consume or register it. */
const SCHEMA_USERS = ['produce', 'consume', 'register'] as const;

/**
 * Registers the schemas of the job types `principal` may produce, consume or
 * register, and skips the rest, so a token scoped to one job can still use a
 * client built on the whole catalog. A (job, version) not yet registered
 * takes `register:<job>`: a token that may only produce or consume the type
 * may present the schema registered, which writes nothing, and is refused
 * with `FORBIDDEN` for a version not yet registered. `FORBIDDEN` too when the
 * token may use none of the types; `CONFLICT` when a (job, version) is
 * registered with a different schema. Resolves to the entries registered.
 */
export async function registerSchemas(
  services: ServerServices,
  principal: Principal,
  schemas: readonly SchemaInput[],
): Promise<{ name: string; version: number; fingerprint: string }[]> {
  const permitted = schemas.filter(({ name }) => hasAnyScope(principal, SCHEMA_USERS, name));
  const refused = schemas.find((schema) => !permitted.includes(schema));
  if (refused && permitted.length === 0) {
    throw new WorkqError(
      'FORBIDDEN',
      `This token may not register schemas for "${refused.name}": it needs produce:${refused.name}, consume:${refused.name} or register:${refused.name}.`,
    );
  }
  const writable = permitted.filter(({ name }) => hasScope(principal, 'register', name));
  const presented = permitted.filter((schema) => !writable.includes(schema));
  const confirmed = await services.registry.confirm(presented);
  if (confirmed.unregistered.length > 0) throw cannotRegister(confirmed.unregistered);
  const entries = [...confirmed.registered, ...(await services.registry.register(writable))];
  return entries.map(({ name, version, fingerprint }) => ({ name, version, fingerprint }));
}

/** The registered schemas of the job types `principal` may produce, consume or register (`admin`: all). */
export async function listSchemas(services: ServerServices, principal: Principal, name: string | undefined) {
  const entries = await services.registry.list(name);
  return entries.filter((entry) => hasAnyScope(principal, SCHEMA_USERS, entry.name));
}

/**
 * Removes the registered schema of one (job, version); resolves to whether
 * one was registered. This server forgets it at once; the others hear it
 * over the wake-up bus.
 */
export async function removeSchema(services: ServerServices, name: string, version: number): Promise<boolean> {
  const removed = await services.registry.remove(name, version);
  services.bus.announceSchemasChanged(name);
  return removed;
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
