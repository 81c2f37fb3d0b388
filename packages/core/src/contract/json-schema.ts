import { z } from 'zod';
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

/** A payload schema as JSON Schema; parts JSON Schema cannot express (transforms, refinements) become `{}`. */
export function toPayloadJsonSchema(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
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
    changes.push({ path, kind: 'type-changed', breaking: true, detail: `type changed from ${typesA} to ${typesB}` });
    return changes;
  }
  if (Array.isArray(a.enum) || Array.isArray(b.enum)) {
    const valuesA = (a.enum as unknown[] | undefined) ?? [];
    const valuesB = (b.enum as unknown[] | undefined) ?? [];
    for (const value of valuesA.filter((v) => !valuesB.includes(v))) {
      changes.push({
        path,
        kind: 'enum-value-removed',
        breaking: true,
        detail: `enum value ${JSON.stringify(value)} removed`,
      });
    }
    for (const value of valuesB.filter((v) => !valuesA.includes(v))) {
      changes.push({
        path,
        kind: 'enum-value-added',
        breaking: false,
        detail: `enum value ${JSON.stringify(value)} added`,
      });
    }
  }
  const propsA = asObject(a.properties);
  const propsB = asObject(b.properties);
  const requiredB = new Set((b.required as string[] | undefined) ?? []);
  for (const key of Object.keys(propsA)) {
    const child = path === '(root)' ? key : `${path}.${key}`;
    if (!(key in propsB)) {
      changes.push({ path: child, kind: 'field-removed', breaking: true, detail: `field "${key}" removed` });
    } else {
      changes.push(...diffJsonSchemas(propsA[key], propsB[key], child));
    }
  }
  for (const key of Object.keys(propsB)) {
    if (key in propsA) continue;
    const child = path === '(root)' ? key : `${path}.${key}`;
    const hasDefault = asObject(propsB[key]).default !== undefined;
    if (requiredB.has(key) && !hasDefault) {
      changes.push({
        path: child,
        kind: 'field-added-required',
        breaking: true,
        detail: `required field "${key}" added without a default`,
      });
    } else {
      changes.push({
        path: child,
        kind: 'field-added-optional',
        breaking: false,
        detail: `optional field "${key}" added`,
      });
    }
  }
  if (a.items !== undefined || b.items !== undefined) changes.push(...diffJsonSchemas(a.items, b.items, `${path}[]`));
  if (changes.length === 0 && canonicalJson(a) !== canonicalJson(b)) {
    changes.push({ path, kind: 'other', breaking: false, detail: 'constraints changed' });
  }
  return changes;
}
