import { z } from 'zod';
import { backtrackingConstructOf } from './backtracking-patterns.ts';
import type { Catalog } from './types.ts';

/** One version of one job's payload, as JSON Schema (draft 2020-12, input side). */
export interface JobJsonSchema {
  name: string;
  version: number;
  jsonSchema: Record<string, unknown>;
}

/** The payload JSON Schema of every version of every job in a catalog, oldest version first. */
export function catalogJsonSchemas(catalog: Catalog): JobJsonSchema[] {
  const entries: JobJsonSchema[] = [];
  for (const [name, definition] of Object.entries(catalog)) {
    for (const version of definition.versions) {
      const schema =
        version === definition.version
          ? definition.payload
          : (definition.previous as Record<number, { payload: z.ZodType }>)[version]?.payload;
      if (!schema) continue;
      entries.push({ name, version, jsonSchema: toPayloadJsonSchema(schema) });
    }
  }
  return entries;
}

/**
 * The keyword under which a payload JSON Schema lists what it cannot check:
 * `[{ "path", "constraint" }]`, present only when something is unchecked.
 * JSON Schema validators ignore it; the queue server reports it.
 */
export const UNCHECKED_KEYWORD = 'x-workq-unchecked';

/** A constraint of a Zod payload schema its JSON Schema does not check. */
export interface UncheckedConstraint {
  /** Where, as a dotted path from the payload root (`(root)` for the payload itself; `[]` for every item). */
  path: string;
  constraint: string;
}

/**
 * A payload schema as JSON Schema (input side): it accepts every payload the
 * Zod schema accepts, and lists under `UNCHECKED_KEYWORD` the constraints it
 * cannot express — refinements, the output side of pipes and transforms,
 * coercion and preprocessing, and types JSON has not (dates, bigints, maps,
 * …), and patterns that need a backtracking engine (lookaround,
 * backreferences: Zod's hostname, emoji and ISO duration formats among them),
 * which the queue server refuses to run — so a validator of this schema
 * accepts some payloads Zod refuses, and says so. Parts that accept any input (coerced, preprocessed, `.catch`) are
 * `{}` and not required.
 */
export function toPayloadJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const unchecked = new Map<string, UncheckedConstraint>();
  const note = (path: readonly (string | number)[], constraint: string) => {
    const at = payloadPathOf(path);
    unchecked.set(`${at}\u0000${constraint}`, { path: at, constraint });
  };
  const json = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema, path }) => {
      const def = defOf(zodSchema);
      if (def.checks?.some((check) => defOf(check).check === 'custom'))
        note(path, 'refinement (.refine, .superRefine or .check)');
      if (def.coerce) note(path, 'coercion (z.coerce): the coerced value is not checked');
      const missing = def.type === undefined ? undefined : MISSING_IN_JSON_SCHEMA[def.type];
      if (missing) note(path, missing);
      if (def.type === 'pipe' && def.in && def.out) {
        if (defOf(def.in).type === 'transform')
          note(path, 'preprocessing (z.preprocess): the processed value is not checked');
        else
          note(path, defOf(def.out).type === 'transform' ? 'transform (.transform)' : 'the schema piped into (.pipe)');
      }
      if (acceptsAnyInput(def)) clear(jsonSchema as Record<string, unknown>);
      dropBacktrackingPatterns(jsonSchema as Record<string, unknown>, (constraint) => note(path, constraint));
      if (def.type === 'object' && def.shape) {
        const optional = Object.keys(def.shape).filter((key) => acceptsAnyInput(defOf(def.shape?.[key])));
        const required = (jsonSchema as { required?: string[] }).required;
        if (required && optional.length > 0) {
          const left = required.filter((key) => !optional.includes(key));
          if (left.length > 0) (jsonSchema as { required?: string[] }).required = left;
          else delete (jsonSchema as { required?: string[] }).required;
        }
      }
    },
  }) as Record<string, unknown>;
  if (unchecked.size > 0) {
    json[UNCHECKED_KEYWORD] = [...unchecked.values()].sort(
      (a, b) => a.path.localeCompare(b.path) || a.constraint.localeCompare(b.constraint),
    );
  }
  return json;
}

/** The constraints a registered payload JSON Schema lists as unchecked (see `toPayloadJsonSchema`). */
export function uncheckedConstraintsOf(jsonSchema: unknown): UncheckedConstraint[] {
  const listed = (jsonSchema as Record<string, unknown> | null)?.[UNCHECKED_KEYWORD];
  if (!Array.isArray(listed)) return [];
  return listed.flatMap((item: unknown) => {
    const { path, constraint } = (item ?? {}) as Record<string, unknown>;
    return typeof path === 'string' && typeof constraint === 'string' ? [{ path, constraint }] : [];
  });
}

/** The parts of a Zod schema's definition read here (Zod 4 keeps them on `_zod.def`). */
interface ZodDefinition {
  type?: string;
  coerce?: boolean;
  check?: string;
  checks?: readonly unknown[];
  in?: unknown;
  out?: unknown;
  shape?: Record<string, unknown>;
}

function defOf(schema: unknown): ZodDefinition {
  return ((schema as { _zod?: { def?: ZodDefinition } } | undefined)?._zod?.def ?? {}) as ZodDefinition;
}

/** Zod types that JSON Schema cannot express at all: their JSON Schema is `{}`. */
const MISSING_IN_JSON_SCHEMA: Readonly<Record<string, string>> = {
  custom: 'custom check (z.custom)',
  transform: 'transform (z.transform)',
  date: 'type Date (not JSON; plain HTTP cannot send one)',
  bigint: 'type bigint (not JSON; plain HTTP cannot send one)',
  map: 'type Map (not JSON; plain HTTP cannot send one)',
  set: 'type Set (not JSON; plain HTTP cannot send one)',
  nan: 'NaN (not JSON)',
  symbol: 'type symbol',
  function: 'type function',
  promise: 'type promise',
};

/** Whether a schema takes any input: coerced, preprocessed, caught, a bare transform or custom check. */
function acceptsAnyInput(def: ZodDefinition): boolean {
  if (def.coerce || def.type === 'catch' || def.type === 'transform' || def.type === 'custom') return true;
  return def.type === 'pipe' && defOf(def.in).type === 'transform';
}

/** Removes the `pattern`s (also those `allOf` lists) that need a backtracking engine, noting each. */
function dropBacktrackingPatterns(jsonSchema: Record<string, unknown>, note: (constraint: string) => void): void {
  const parts = [
    jsonSchema,
    ...(Array.isArray(jsonSchema.allOf) ? (jsonSchema.allOf as Record<string, unknown>[]) : []),
  ];
  for (const part of parts) {
    const construct = typeof part?.pattern === 'string' ? backtrackingConstructOf(part.pattern) : undefined;
    if (!construct) continue;
    note(`pattern ${JSON.stringify(part.pattern)} (it uses ${construct}, which a linear-time engine cannot run)`);
    delete part.pattern;
  }
}

/** Leaves only annotations (`default`, `description`, …): a schema any value satisfies. */
function clear(jsonSchema: Record<string, unknown>): void {
  for (const key of Object.keys(jsonSchema)) {
    if (!ANNOTATIONS.has(key)) delete jsonSchema[key];
  }
}

const ANNOTATIONS = new Set(['default', 'description', 'title', 'examples', 'deprecated', 'readOnly', 'writeOnly']);

/** A JSON Schema location (`properties.a.items`) as a payload path (`a[]`). */
function payloadPathOf(path: readonly (string | number)[]): string {
  let out = '';
  for (let i = 0; i < path.length; i++) {
    const step = path[i];
    if (step === 'properties' || step === 'patternProperties') out += `.${String(path[++i])}`;
    else if (step === 'items') out += '[]';
    else if (step === 'prefixItems') out += `[${String(path[++i])}]`;
    else if (step === 'additionalProperties') out += '.*';
    else if (step === 'anyOf' || step === 'oneOf' || step === 'allOf') i++;
    else if (step === '$defs' || step === 'definitions') out = `#${String(path[++i])}`;
  }
  return out === '' ? '(root)' : out.replace(/^\./, '');
}

/** JSON with object keys sorted at every depth: equal values give equal text, which fingerprints rely on. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}

/** One difference between two payload schemas, and whether it breaks consumers or producers of the other side. */
export interface SchemaChange {
  /** Where, as a dotted path from the payload root (`(root)` for the payload itself). */
  path: string;
  kind:
    | 'field-removed'
    | 'field-added-required'
    | 'field-added-optional'
    | 'type-changed'
    | 'enum-value-removed'
    | 'enum-value-added'
    | 'other';
  breaking: boolean;
  detail: string;
}

type Json = Record<string, unknown>;

const asObject = (value: unknown): Json =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};

/** Which kinds of change break consumers or producers of the other side (see `diffJsonSchemas`). */
const BREAKING: Readonly<Record<SchemaChange['kind'], boolean>> = {
  'field-removed': true,
  'field-added-required': true,
  'field-added-optional': false,
  'type-changed': true,
  'enum-value-removed': true,
  'enum-value-added': false,
  other: false,
};

function schemaChange(path: string, kind: SchemaChange['kind'], detail: string): SchemaChange {
  return { path, kind, breaking: BREAKING[kind], detail };
}

function typesOf(schema: Json): string[] {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return [...(schema.type as string[])].sort();
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Json[]).flatMap(typesOf).sort();
  if (schema.const !== undefined) return [typeof schema.const];
  if (Array.isArray(schema.enum)) return [...new Set((schema.enum as unknown[]).map((v) => typeof v))].sort();
  return [];
}

/**
 * The differences between the payload schema `before` and `after` of one job
 * version. Breaking: a field removed, a type changed, a new required field
 * without a default, an enum value removed.
 */
export function diffJsonSchemas(before: unknown, after: unknown, path = '(root)'): SchemaChange[] {
  const a = asObject(before);
  const b = asObject(after);
  const changes: SchemaChange[] = [];
  const typesA = typesOf(a).join('|');
  const typesB = typesOf(b).join('|');
  if (typesA !== typesB && typesA !== '' && typesB !== '') {
    changes.push(schemaChange(path, 'type-changed', `type changed from ${typesA} to ${typesB}`));
    return changes;
  }
  if (Array.isArray(a.enum) || Array.isArray(b.enum)) {
    const valuesA = (a.enum as unknown[] | undefined) ?? [];
    const valuesB = (b.enum as unknown[] | undefined) ?? [];
    for (const value of valuesA.filter((v) => !valuesB.includes(v))) {
      changes.push(schemaChange(path, 'enum-value-removed', `enum value ${JSON.stringify(value)} removed`));
    }
    for (const value of valuesB.filter((v) => !valuesA.includes(v))) {
      changes.push(schemaChange(path, 'enum-value-added', `enum value ${JSON.stringify(value)} added`));
    }
  }
  const propsA = asObject(a.properties);
  const propsB = asObject(b.properties);
  const requiredB = new Set((b.required as string[] | undefined) ?? []);
  for (const key of Object.keys(propsA)) {
    const child = path === '(root)' ? key : `${path}.${key}`;
    if (!(key in propsB)) {
      changes.push(schemaChange(child, 'field-removed', `field "${key}" removed`));
    } else {
      changes.push(...diffJsonSchemas(propsA[key], propsB[key], child));
    }
  }
  for (const key of Object.keys(propsB)) {
    if (key in propsA) continue;
    const child = path === '(root)' ? key : `${path}.${key}`;
    const hasDefault = asObject(propsB[key]).default !== undefined;
    if (requiredB.has(key) && !hasDefault) {
      changes.push(schemaChange(child, 'field-added-required', `required field "${key}" added without a default`));
    } else {
      changes.push(schemaChange(child, 'field-added-optional', `optional field "${key}" added`));
    }
  }
  if (a.items !== undefined || b.items !== undefined) changes.push(...diffJsonSchemas(a.items, b.items, `${path}[]`));
  if (changes.length === 0 && canonicalJson(a) !== canonicalJson(b)) {
    changes.push(schemaChange(path, 'other', 'constraints changed'));
  }
  return changes;
}
