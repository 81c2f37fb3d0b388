import { createHash } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { z } from 'zod';
import { isValidJobName } from '../contract/define-catalog.ts';
import { canonicalJson, diffJsonSchemas, uncheckedConstraintsOf } from '../contract/json-schema.ts';
import { parseWith, payloadSchemaOf } from '../contract/payload.ts';
import type { Catalog } from '../contract/types.ts';
import { isWorkqError, WorkqError } from '../errors.ts';
import type { Clock } from './clock.ts';
import type { SchemaEntry, Store } from './store.ts';
import { toStoredValue } from './stored-value.ts';

/** What a client registers: one version of one job's payload schema. */
export interface SchemaRegistration {
  name: string;
  version: number;
  jsonSchema: Record<string, unknown>;
}

export function fingerprintOf(jsonSchema: unknown): string {
  return createHash('sha256').update(canonicalJson(jsonSchema)).digest('hex');
}

const keyOf = (name: string, version: number): string => `${name}@${version}`;

/**
 * The payload schemas clients registered, kept in the store so every server
 * instance validates against the same contract without a redeploy. Given the
 * catalog itself, payloads of the versions it declares are parsed with its
 * Zod schemas instead, exactly as the SDK parses them.
 */
export class SchemaRegistry {
  // `unicode: false`: string lengths count UTF-16 code units, as Zod's `.min` and `.max` do (Ajv calls the
  // option deprecated, hence no logger: Ajv's only other messages are schema warnings, which `strict: false` drops).
  private readonly ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    validateFormats: true,
    unicode: false,
    logger: false,
  });
  private readonly entries = new Map<string, SchemaEntry>();
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly catalog?: Catalog,
  ) {
    (addFormats as unknown as (ajv: Ajv2020) => void)(this.ajv);
    // Compiles the JSON Schema meta-schema now, at start, rather than in the first registration's request.
    this.ajv.validateSchema({});
  }

  /**
   * Registers each schema unless an equal one is registered. A different
   * schema under a registered (name, version) is refused with `CONFLICT`,
   * naming the job, the version and what differs.
   */
  async register(registrations: readonly SchemaRegistration[]): Promise<SchemaEntry[]> {
    const stored: SchemaEntry[] = [];
    for (const registration of registrations) {
      const { name, version, jsonSchema } = registration;
      if (!isValidJobName(name)) throw new WorkqError('VALIDATION', `"${name}" is not a valid job name.`);
      if (toStoredValue(jsonSchema, `The JSON Schema of "${name}" v${version}`) !== jsonSchema) {
        throw new WorkqError('VALIDATION', `The JSON Schema of "${name}" v${version} must be plain JSON.`);
      }
      const fingerprint = fingerprintOf(jsonSchema);
      this.validatorFor({ name, version, fingerprint, jsonSchema });
      const known = this.entries.get(keyOf(name, version));
      const entry =
        known?.fingerprint === fingerprint
          ? known
          : await this.store.registerSchema({ name, version, fingerprint, jsonSchema, registeredAt: this.clock.now() });
      if (entry.fingerprint !== fingerprint) throw conflict(entry, jsonSchema, fingerprint);
      this.entries.set(keyOf(name, version), entry);
      stored.push(entry);
    }
    return stored;
  }

  /**
   * Checks each payload against the schema of its exact (name, version): the
   * catalog's Zod schema when the server has one that declares that version,
   * otherwise the registered JSON Schema (one lookup, then a plain loop).
   */
  async validateAll(name: string, version: number, payloads: readonly unknown[]): Promise<void> {
    const zodSchema = this.catalogSchema(name, version);
    if (zodSchema) {
      for (const [index, payload] of payloads.entries()) {
        const which = payloads.length > 1 ? `Payload ${index + 1} of ${payloads.length}` : 'Payload';
        parseWith(zodSchema, payload, `${which} of "${name}" v${version}`);
      }
      return;
    }
    const entry = await this.lookup(name, version);
    const validator = this.validatorFor(entry);
    for (const [index, payload] of payloads.entries()) {
      if (validator(payload)) continue;
      const which = payloads.length > 1 ? `Payload ${index + 1} of ${payloads.length}` : 'Payload';
      const issues = (validator.errors ?? []).slice(0, 10).map((e) => ({
        path: e.instancePath.split('/').filter(Boolean),
        message: e.message ?? 'is invalid',
      }));
      const text = issues.map((i) => `${i.path.join('.') || '(payload)'}: ${i.message}`).join('; ');
      throw new WorkqError('VALIDATION', `${which} of "${name}" v${version} is invalid: ${text}`, { details: issues });
    }
  }

  /**
   * What a payload of (name, version) that passed `validateAll` was not
   * checked for, one sentence, or none: nothing when the catalog checked it,
   * else the constraints its registered JSON Schema lists as inexpressible.
   * Read from the entry `validateAll` looked up.
   */
  uncheckedWarnings(name: string, version: number): string[] {
    if (this.catalogSchema(name, version)) return [];
    const unchecked = uncheckedConstraintsOf(this.entries.get(keyOf(name, version))?.jsonSchema);
    if (unchecked.length === 0) return [];
    const listed = unchecked.map(({ path, constraint }) => `${path}: ${constraint}`).join('; ');
    return [
      `Checked against the registered JSON Schema of "${name}" v${version}; constraints it cannot express are not checked here, and a payload that breaks one fails at the consumer: ${listed}. Start the server with the catalog (startServer({ jobs })) to check them.`,
    ];
  }

  /** The catalog's payload schema of (name, version), when the server has a catalog that declares it. */
  private catalogSchema(name: string, version: number): z.ZodType | undefined {
    const definition = this.catalog && Object.hasOwn(this.catalog, name) ? this.catalog[name] : undefined;
    if (!definition?.versions.includes(version)) return undefined;
    return payloadSchemaOf(name, definition, version);
  }

  /** The newest version registered for `name`; `UNKNOWN_JOB` when none is. */
  async newestVersion(name: string): Promise<number> {
    const registered = await this.store.listSchemas(name);
    if (registered.length === 0) throw unknownJob(name);
    return Math.max(...registered.map((entry) => entry.version));
  }

  async list(name?: string): Promise<SchemaEntry[]> {
    return this.store.listSchemas(name);
  }

  /**
   * Checks schemas against those registered, writing nothing: for a caller
   * that may use a job type but not register its versions. Resolves to the
   * entries registered with an equal schema, and the registrations whose
   * (name, version) is not registered; a different schema under a registered
   * (name, version) is refused with `CONFLICT`, as `register` refuses it.
   */
  async confirm(
    registrations: readonly SchemaRegistration[],
  ): Promise<{ registered: SchemaEntry[]; unregistered: SchemaRegistration[] }> {
    const registered: SchemaEntry[] = [];
    const unregistered: SchemaRegistration[] = [];
    for (const registration of registrations) {
      const { name, version, jsonSchema } = registration;
      if (toStoredValue(jsonSchema, `The JSON Schema of "${name}" v${version}`) !== jsonSchema) {
        throw new WorkqError('VALIDATION', `The JSON Schema of "${name}" v${version} must be plain JSON.`);
      }
      const entry = await this.lookup(name, version).catch((error: unknown) => {
        if (isWorkqError(error, 'UNKNOWN_JOB') || isWorkqError(error, 'UNSUPPORTED_VERSION')) return undefined;
        throw error;
      });
      const fingerprint = fingerprintOf(jsonSchema);
      if (!entry) unregistered.push(registration);
      else if (entry.fingerprint !== fingerprint) throw conflict(entry, jsonSchema, fingerprint);
      else registered.push(entry);
    }
    return { registered, unregistered };
  }

  /**
   * Removes the registered schema of (name, version) from the store and
   * forgets what this server holds of `name`; resolves to whether one was
   * registered. Other servers hold on to theirs until told to `forget`.
   */
  async remove(name: string, version: number): Promise<boolean> {
    const removed = await this.store.removeSchema(name, version);
    this.forget(name);
    return removed;
  }

  /**
   * Drops the entries and validators held for `name` (for every type without
   * one), so the next payload or registration reads the store again: after
   * a schema of it was removed, here or on another server.
   */
  forget(name?: string): void {
    // Keys start `<name>@` (`keyOf`), and no job name has an `@`.
    const held = (key: string) => name === undefined || key.startsWith(`${name}@`);
    for (const key of [...this.entries.keys()].filter(held)) this.entries.delete(key);
    for (const key of [...this.validators.keys()].filter(held)) this.validators.delete(key);
  }

  private async lookup(name: string, version: number): Promise<SchemaEntry> {
    const cached = this.entries.get(keyOf(name, version));
    if (cached) return cached;
    // No store keeps a schema under a name that is not a job name: answered without asking one.
    if (!isValidJobName(name)) throw unknownJob(name);
    const registered = await this.store.listSchemas(name);
    for (const entry of registered) this.entries.set(keyOf(entry.name, entry.version), entry);
    const entry = this.entries.get(keyOf(name, version));
    if (entry) return entry;
    if (registered.length === 0) throw unknownJob(name);
    throw new WorkqError(
      'UNSUPPORTED_VERSION',
      `Job "${name}" has no registered version ${version} (registered: ${registered.map((e) => e.version).join(', ')}): deploy a catalog that declares it first.`,
    );
  }

  /** The validator of one schema, compiled once per (name, version, fingerprint); an invalid schema is refused. */
  private validatorFor(schema: Pick<SchemaEntry, 'name' | 'version' | 'fingerprint' | 'jsonSchema'>): ValidateFunction {
    const key = `${keyOf(schema.name, schema.version)}#${schema.fingerprint}`;
    return this.validators.get(key) ?? this.compile(key, schema);
  }

  private compile(key: string, { name, version, jsonSchema }: Pick<SchemaEntry, 'name' | 'version' | 'jsonSchema'>) {
    try {
      const { $schema: _ignored, ...schema } = jsonSchema as Record<string, unknown>;
      const validator = this.ajv.compile(schema);
      this.validators.set(key, validator);
      return validator;
    } catch (error) {
      throw new WorkqError('VALIDATION', `The JSON Schema for "${name}" v${version} is not a valid schema.`, {
        cause: error,
      });
    }
  }
}

function unknownJob(name: string): WorkqError {
  return new WorkqError(
    'UNKNOWN_JOB',
    `No job type "${name}" is registered with this server: connect a producer or consumer whose catalog declares it (it registers its schemas), or check the name.`,
  );
}

function conflict(existing: SchemaEntry, jsonSchema: unknown, fingerprint: string): WorkqError {
  const changes = diffJsonSchemas(existing.jsonSchema, jsonSchema).map((c) => `${c.path}: ${c.detail}`);
  return new WorkqError(
    'CONFLICT',
    `Job "${existing.name}" version ${existing.version} is already registered with a different payload schema ` +
      `(${existing.fingerprint.slice(0, 12)} vs ${fingerprint.slice(0, 12)}): ${changes.slice(0, 5).join('; ') || 'constraints differ'}. ` +
      'A changed payload needs a new version with an upgrade.',
    { details: { name: existing.name, version: existing.version, changes } },
  );
}
