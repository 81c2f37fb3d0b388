import { createHash } from 'node:crypto';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { z } from 'zod';
import { isValidJobName } from '../contract/define-catalog.ts';
import { canonicalJson, diffJsonSchemas, uncheckedConstraintsOf } from '../contract/json-schema.ts';
import { parseWith, payloadSchemaOf } from '../contract/payload.ts';
import type { Catalog } from '../contract/types.ts';
import { isWorkqError, WorkqError } from '../errors.ts';
import type { Clock } from './clock.ts';
import { createPayloadAjv } from './payload-ajv.ts';
import { checkSchemaAllowed } from './schema-allowlist.ts';
import type { RegistryStore, SchemaEntry } from './store.ts';

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

/** Bounds on what clients may register; each has a default. */
export interface SchemaLimits {
  /** Largest canonical JSON text of one schema, in UTF-8 bytes. @defaultValue 65_536 (64 KiB) */
  maxSchemaBytes?: number | undefined;
  /** Deepest nesting of arrays and objects in one schema (the schema itself is level 1). @defaultValue 64 */
  maxSchemaDepth?: number | undefined;
  /** Most versions registered for one job type. @defaultValue 100 */
  maxVersionsPerJob?: number | undefined;
  /** Most job types with a registered schema, counted over the whole store. @defaultValue 1000 */
  maxJobTypes?: number | undefined;
}

export const DEFAULT_SCHEMA_LIMITS: Readonly<Required<SchemaLimits>> = Object.freeze({
  maxSchemaBytes: 65_536,
  maxSchemaDepth: 64,
  maxVersionsPerJob: 100,
  maxJobTypes: 1000,
});

export interface SchemaRegistryOptions {
  /** @defaultValue `DEFAULT_SCHEMA_LIMITS` */
  limits?: SchemaLimits;
  /**
   * Told once per stored schema that is refused (see `SchemaRegistry`), with
   * the job, the version and why. @defaultValue none (refusals go unreported)
   */
  warn?: (message: string, fields: { name: string; version: number; reason: string }) => void;
}

/**
 * The payload schemas clients registered, kept in the store so every server
 * instance validates against the same contract without a redeploy. Given the
 * catalog itself, payloads of the versions it declares are parsed with its
 * Zod schemas instead, exactly as the SDK parses them.
 *
 * Registered schemas are untrusted input, and so are stored ones (written
 * before these checks, or by hand): each passes `checkSchemaAllowed` and the
 * limits before anything compiles it, its patterns run in linear time, and
 * only the validators of stored schemas are kept. A stored schema the checks
 * refuse is never compiled: it is reported once through `warn`, payloads of
 * its version are refused with `UNSUPPORTED_VERSION`, and registering that
 * version skips it, until an admin removes it.
 */
export class SchemaRegistry {
  private readonly ajv = createPayloadAjv();
  private readonly limits: Readonly<Required<SchemaLimits>>;
  private readonly warn: SchemaRegistryOptions['warn'];
  private readonly entries = new Map<string, SchemaEntry>();
  /** Validators of stored schemas, by (name, version, fingerprint). */
  private readonly validators = new Map<string, ValidateFunction>();
  /** Why each stored schema the checks refused was refused, by (name, version, fingerprint). */
  private readonly refusals = new Map<string, string>();

  constructor(
    private readonly store: RegistryStore,
    private readonly clock: Clock,
    private readonly catalog?: Catalog,
    options: SchemaRegistryOptions = {},
  ) {
    this.limits = Object.freeze({ ...DEFAULT_SCHEMA_LIMITS, ...options.limits });
    this.warn = options.warn;
  }

  /**
   * Registers each schema unless an equal one is registered. Checked, in
   * this order, before anything is compiled: the allowlist and size limits
   * (`VALIDATION`, `PAYLOAD_TOO_LARGE`), the JSON Schema meta-schema
   * (`VALIDATION`), an entry already stored under the
   * (name, version) (`CONFLICT` when it differs, naming what differs), and
   * the version and job-type counts (`VALIDATION`). Resolves to the entries
   * registered; a version whose stored schema is refused is skipped.
   */
  async register(registrations: readonly SchemaRegistration[]): Promise<SchemaEntry[]> {
    const stored: SchemaEntry[] = [];
    for (const registration of registrations) {
      const { name, version, jsonSchema } = registration;
      const what = `The JSON Schema of "${name}" v${version}`;
      if (!isValidJobName(name)) throw new WorkqError('VALIDATION', `"${name}" is not a valid job name.`);
      checkSchemaAllowed(jsonSchema, this.limits, what);
      // The fingerprint of the schema itself, as every stored row and `confirm` compute it.
      const fingerprint = fingerprintOf(jsonSchema);
      // Checked against the meta-schema (nothing compiled or kept) before the conflict check reads it.
      const { $schema: _ignored, ...schema } = jsonSchema;
      if (!this.ajv.validateSchema(schema)) {
        const problems = this.ajv.errorsText(this.ajv.errors, { dataVar: 'schema' });
        throw new WorkqError('VALIDATION', `${what} is not a valid JSON Schema: ${problems}.`);
      }
      const existing = this.entries.get(keyOf(name, version)) ?? (await this.storedEntry(name, version));
      const entry = existing ?? (await this.storeNew({ name, version, fingerprint, jsonSchema }));
      if (this.refusalOf(entry) !== undefined) continue;
      if (entry.fingerprint !== fingerprint) throw conflict(entry, jsonSchema, fingerprint);
      stored.push(entry);
    }
    return stored;
  }

  /** The stored entry of (name, version), or `undefined`; caches every version of `name` it reads. */
  private async storedEntry(name: string, version: number): Promise<SchemaEntry | undefined> {
    for (const entry of await this.store.listSchemas(name)) this.entries.set(keyOf(entry.name, entry.version), entry);
    return this.entries.get(keyOf(name, version));
  }

  /**
   * Stores a new (name, version) within the count limits, compiling it first
   * (an invalid schema is refused); keeps its validator only once stored.
   * Resolves to the entry now stored, which is another's when a concurrent
   * registration won.
   */
  private async storeNew(schema: Pick<SchemaEntry, 'name' | 'version' | 'fingerprint' | 'jsonSchema'>) {
    const { name, version } = schema;
    const versions = [...this.entries.values()].filter((entry) => entry.name === name).length;
    if (versions >= this.limits.maxVersionsPerJob) {
      throw new WorkqError(
        'VALIDATION',
        `Job "${name}" has ${versions} registered versions, the most this server accepts (limits.maxVersionsPerJob): remove old ones (workq schemas remove) before registering v${version}.`,
      );
    }
    if (versions === 0) {
      const types = new Set((await this.store.listSchemas()).map((entry) => entry.name)).size;
      if (types >= this.limits.maxJobTypes) {
        throw new WorkqError(
          'VALIDATION',
          `The store has schemas of ${types} job types, the most this server accepts (limits.maxJobTypes): remove unused ones (workq schemas remove) before registering "${name}".`,
        );
      }
    }
    const validator = this.compile(schema);
    const entry = await this.store.registerSchema({ ...schema, registeredAt: this.clock.now() });
    this.entries.set(keyOf(name, version), entry);
    if (entry.fingerprint === schema.fingerprint) this.validators.set(validatorKey(entry), validator);
    else this.ajv.removeSchema(validator.schema as object);
    return entry;
  }

  /**
   * Checks each payload against the schema of its exact (name, version): the
   * catalog's Zod schema when the server has one that declares that version,
   * otherwise the registered JSON Schema (one lookup, then a plain loop).
   */
  async validateAll(name: string, version: number, payloads: readonly unknown[]): Promise<void> {
    const zodSchema = this.catalogSchema(name, version);
    if (zodSchema) {
      for (let index = 0; index < payloads.length; index++) {
        // Named only when it fails, parsed again for the message: this loop runs for every job of a bulk enqueue.
        if (zodSchema.safeParse(payloads[index]).success) continue;
        const which = payloads.length > 1 ? `Payload ${index + 1} of ${payloads.length}` : 'Payload';
        parseWith(zodSchema, payloads[index], `${which} of "${name}" v${version}`);
      }
      return;
    }
    const validator = this.validatorFor(await this.lookup(name, version));
    for (const [index, payload] of payloads.entries()) {
      // Only `true` is valid: anything else (a promise, were a schema ever async) is not.
      if (validator(payload) === true) continue;
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
      // The limits `register` applies come first, so no schema is diffed against the registered one unchecked.
      checkSchemaAllowed(jsonSchema, this.limits, `The JSON Schema of "${name}" v${version}`);
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
    for (const key of [...this.validators.keys()].filter(held)) {
      const schema = this.validators.get(key)?.schema;
      if (typeof schema === 'object') this.ajv.removeSchema(schema);
      this.validators.delete(key);
    }
    for (const key of [...this.refusals.keys()].filter(held)) this.refusals.delete(key);
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

  /**
   * The validator of a stored schema, compiled once per (name, version,
   * fingerprint) after the checks pass; `UNSUPPORTED_VERSION` when they, or
   * the compiler, refuse it.
   */
  private validatorFor(entry: SchemaEntry): ValidateFunction {
    const known = this.validators.get(validatorKey(entry));
    if (known) return known;
    const refusal = this.refusalOf(entry);
    if (refusal === undefined) {
      try {
        const validator = this.compile(entry);
        this.validators.set(validatorKey(entry), validator);
        return validator;
      } catch (error) {
        this.refuseStored(entry, error instanceof Error ? error.message : String(error));
      }
    }
    throw new WorkqError(
      'UNSUPPORTED_VERSION',
      `Job "${entry.name}" v${entry.version} cannot be used: its stored JSON Schema was refused (${this.refusals.get(validatorKey(entry))}). An admin should remove it (workq schemas remove ${entry.name} ${entry.version}, or sdk.admin.removeSchema) and register it again.`,
    );
  }

  /** Why a stored schema is refused by the checks registration applies, or `undefined`; warns once per schema. */
  private refusalOf(entry: SchemaEntry): string | undefined {
    const key = validatorKey(entry);
    if (this.validators.has(key)) return undefined;
    if (!this.refusals.has(key)) {
      try {
        const what = `The stored JSON Schema of "${entry.name}" v${entry.version}`;
        checkSchemaAllowed(entry.jsonSchema, this.limits, what);
        return undefined;
      } catch (error) {
        this.refuseStored(entry, error instanceof Error ? error.message : String(error));
      }
    }
    return this.refusals.get(key);
  }

  private refuseStored(entry: SchemaEntry, reason: string): void {
    this.refusals.set(validatorKey(entry), reason);
    this.warn?.(
      `The stored JSON Schema of "${entry.name}" v${entry.version} is refused and not used; remove it (workq schemas remove ${entry.name} ${entry.version}).`,
      { name: entry.name, version: entry.version, reason },
    );
  }

  /** Compiles a schema that passed the checks; `VALIDATION` when the compiler refuses it. */
  private compile({ name, version, jsonSchema }: Pick<SchemaEntry, 'name' | 'version' | 'jsonSchema'>) {
    const { $schema: _ignored, ...schema } = jsonSchema as Record<string, unknown>;
    try {
      return this.ajv.compile(schema);
    } catch (error) {
      this.ajv.removeSchema(schema);
      throw new WorkqError(
        'VALIDATION',
        `The JSON Schema of "${name}" v${version} is not a valid schema: ${error instanceof Error ? error.message : String(error)}.`,
        { cause: error },
      );
    }
  }
}

const validatorKey = (entry: Pick<SchemaEntry, 'name' | 'version' | 'fingerprint'>): string =>
  `${keyOf(entry.name, entry.version)}#${entry.fingerprint}`;

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
