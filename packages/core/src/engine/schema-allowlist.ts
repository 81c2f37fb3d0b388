import { canonicalJson } from '../contract/json-schema.ts';
import { WorkqError } from '../errors.ts';
import { checkLinearPattern } from './linear-patterns.ts';
import { REFUSED_FORMATS } from './payload-ajv.ts';
import { toStoredValue } from './stored-value.ts';

/** The bounds `checkSchemaAllowed` holds a schema to. */
export interface SchemaShapeLimits {
  /** Largest canonical JSON text of the schema, in UTF-8 bytes. */
  maxSchemaBytes: number;
  /** Deepest nesting of arrays and objects in the schema (the schema itself is level 1). */
  maxSchemaDepth: number;
}

/**
 * Most subschemas that may apply to one value of a payload, however deep it
 * nests. A schema whose references branch back to themselves (`anyOf` of two
 * `$ref`s to the schema that holds it) applies exponentially many subschemas
 * to nested data; this bound refuses it at registration.
 */
const MAX_SUBSCHEMAS_PER_VALUE = 1_000;
/** How deep a payload may nest (the stores' `MAX_STORED_DEPTH`): how far the bound above is followed. */
const MAX_PAYLOAD_DEPTH = 64;

/** Keywords whose value is one subschema applied to the same value (`inPlace`) or to its parts. */
const SUBSCHEMA = new Set(['not', 'if', 'then', 'else']);
const SUBSCHEMA_OF_PARTS = new Set([
  'additionalProperties',
  'propertyNames',
  'unevaluatedProperties',
  'contains',
  'unevaluatedItems',
  'additionalItems',
]);
/** Keywords whose value is a list of subschemas. */
const SUBSCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
/** Keywords whose value maps names (or patterns) to subschemas. */
const SUBSCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords with a plain value: assertions, and annotations validators ignore. */
const VALUE_KEYWORDS = new Set([
  'type',
  'enum',
  'const',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'format',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxContains',
  'minContains',
  'maxProperties',
  'minProperties',
  'required',
  'dependentRequired',
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$comment',
  'contentEncoding',
  'contentMediaType',
]);
/** The drafts a registered schema may declare in `$schema` (at its root only). */
const KNOWN_DRAFTS = new Set([
  'https://json-schema.org/draft/2020-12/schema',
  'https://json-schema.org/draft/2019-09/schema',
  'http://json-schema.org/draft-07/schema#',
  'http://json-schema.org/draft-07/schema',
]);
/** Keywords that identify, load or resolve schemas at run time, or make validation asynchronous. */
const REFUSED_KEYWORDS: Readonly<Record<string, string>> = {
  $async: 'asynchronous validation is not supported',
  $id: 'schema identifiers could shadow other schemas; refer to #/$defs instead',
  $anchor: 'anchors are not supported; refer to #/$defs instead',
  $dynamicRef: 'dynamic references are not supported; use a local $ref into #/$defs',
  $dynamicAnchor: 'dynamic anchors are not supported; use a local $ref into #/$defs',
  $recursiveRef: 'recursive references are not supported; use a local $ref into #/$defs',
  $recursiveAnchor: 'recursive anchors are not supported; use a local $ref into #/$defs',
  $vocabulary: 'vocabularies belong to meta-schemas, not payload schemas',
  $data: 'data references are not supported',
};
/**
 * Most distinct patterns in one schema, and most instructions their programs
 * may have in all: each is compiled at registration, so these bound its
 * cost. The patterns Zod emits for its formats (email, UUID, date-time, IP
 * addresses) have up to about 710 instructions; each distinct pattern counts
 * once.
 */
const MAX_PATTERNS = 64;
const MAX_PATTERN_INSTRUCTIONS_IN_ALL = 4_000;
/** `uniqueItems` compares items pairwise: only with this many items at most. */
const MAX_UNIQUE_ITEMS = 100;

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Checks a JSON Schema a client registered, or a store holds, before anything
 * compiles it; resolves to its canonical JSON. Refused with `VALIDATION`
 * (`PAYLOAD_TOO_LARGE` past `maxSchemaBytes`), naming what and where, when it
 * nests deeper than `maxSchemaDepth`, is not plain JSON, uses a keyword outside the allowlist
 * (what `z.toJSONSchema` emits, `x-` annotations, and nothing that loads,
 * identifies or evaluates schemas or goes async), refers anywhere but
 * `#`, `#/$defs/…` or `#/definitions/…` of itself, has a pattern the
 * linear-time engine cannot run, or references that apply it to one value
 * without end or exponentially often.
 */
export function checkSchemaAllowed(jsonSchema: unknown, limits: SchemaShapeLimits, what: string): string {
  const refuse = (problem: string, at: readonly (string | number)[]) =>
    new WorkqError('VALIDATION', `${what} is refused: ${problem} at ${pointerOf(at)}.`, {
      details: { path: pointerOf(at), problem },
    });
  const tooLarge = () =>
    new WorkqError(
      'PAYLOAD_TOO_LARGE',
      `${what} is refused: its canonical JSON is more than ${limits.maxSchemaBytes} bytes; describe less of the payload, or share repeated parts through "$defs".`,
    );
  const measured = measure(jsonSchema, limits.maxSchemaDepth, limits.maxSchemaBytes);
  if (measured.tooDeep) {
    throw refuse(`it nests arrays and objects more than ${limits.maxSchemaDepth} levels deep`, measured.tooDeep);
  }
  if (measured.tooLarge) throw tooLarge();
  if (!isObject(jsonSchema)) throw refuse('a payload schema must be a JSON object', []);
  if (toStoredValue(jsonSchema, what) !== jsonSchema) throw new WorkqError('VALIDATION', `${what} must be plain JSON.`);
  const canonical = canonicalJson(jsonSchema);
  if (Buffer.byteLength(canonical) > limits.maxSchemaBytes) throw tooLarge();
  const walk: Walk = { root: jsonSchema, nodes: new Map(), patterns: new Map(), refs: [], refuse };
  walkSchema(jsonSchema, [], walk);
  for (const { target, at } of walk.refs) {
    if (typeof target !== 'boolean' && !walk.nodes.has(target as object)) {
      throw refuse('"$ref" points at no subschema', at);
    }
  }
  checkReferences(jsonSchema, walk.nodes, refuse);
  return canonical;
}

/** What the reference check knows of one subschema. */
interface SchemaNode {
  at: readonly (string | number)[];
  /** Subschemas applied to the same value: `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `$ref`, … */
  inPlace: object[];
  /** Subschemas applied to a named property. */
  byName: Map<string, object[]>;
  /** Subschemas applied to a property, item or key whatever its name or index. */
  anyPart: object[];
}

interface Walk {
  root: JsonObject;
  nodes: Map<object, SchemaNode>;
  /** The instructions of each distinct pattern met so far. */
  patterns: Map<string, number>;
  /** Each `$ref`'s target, checked to be a subschema once the walk has seen them all. */
  refs: { target: unknown; at: readonly (string | number)[] }[];
  refuse: (problem: string, at: readonly (string | number)[]) => WorkqError;
}

function walkSchema(schema: unknown, at: readonly (string | number)[], walk: Walk): void {
  if (typeof schema === 'boolean') return;
  if (!isObject(schema)) throw walk.refuse('a subschema must be an object or a boolean', at);
  const node: SchemaNode = { at, inPlace: [], byName: new Map(), anyPart: [] };
  walk.nodes.set(schema, node);
  const sub = (value: unknown, path: readonly (string | number)[], into: object[]) => {
    walkSchema(value, path, walk);
    if (isObject(value)) into.push(value);
  };
  for (const [keyword, value] of Object.entries(schema)) {
    const here = [...at, keyword];
    if (Object.hasOwn(REFUSED_KEYWORDS, keyword)) {
      throw walk.refuse(`keyword "${keyword}" is not allowed (${REFUSED_KEYWORDS[keyword]})`, here);
    }
    if (keyword.startsWith('x-')) continue;
    if (keyword === '$schema') {
      if (at.length > 0 || typeof value !== 'string' || !KNOWN_DRAFTS.has(value)) {
        throw walk.refuse(`"$schema" may only name a JSON Schema draft (2020-12, 2019-09 or 07), at the root`, here);
      }
    } else if (keyword === '$ref') {
      const target = resolveLocalRef(value, here, walk);
      walk.refs.push({ target, at: here });
      if (isObject(target)) node.inPlace.push(target);
    } else if (SUBSCHEMA.has(keyword)) {
      sub(value, here, node.inPlace);
    } else if (SUBSCHEMA_OF_PARTS.has(keyword)) {
      sub(value, here, node.anyPart);
    } else if (keyword === 'items') {
      if (Array.isArray(value)) for (const [i, item] of value.entries()) sub(item, [...here, i], node.anyPart);
      else sub(value, here, node.anyPart);
    } else if (SUBSCHEMA_LISTS.has(keyword)) {
      if (!Array.isArray(value)) throw walk.refuse(`"${keyword}" must be a list of subschemas`, here);
      const into = keyword === 'prefixItems' ? node.anyPart : node.inPlace;
      for (const [i, item] of value.entries()) sub(item, [...here, i], into);
    } else if (SUBSCHEMA_MAPS.has(keyword)) {
      if (!isObject(value)) throw walk.refuse(`"${keyword}" must map names to subschemas`, here);
      for (const [name, item] of Object.entries(value)) {
        const path = [...here, name];
        if (keyword === 'patternProperties') checkPattern(name, path, walk);
        if (keyword === 'properties') {
          const named = node.byName.get(name) ?? [];
          node.byName.set(name, named);
          sub(item, path, named);
        } else if (keyword === 'patternProperties') sub(item, path, node.anyPart);
        else if (keyword === 'dependentSchemas') sub(item, path, node.inPlace);
        else walkSchema(item, path, walk);
      }
    } else if (VALUE_KEYWORDS.has(keyword)) {
      checkValue(schema, keyword, value, here, walk);
    } else {
      throw walk.refuse(
        `unknown keyword "${keyword}" (registered schemas may use the JSON Schema keywords z.toJSONSchema emits, and "x-" annotations)`,
        here,
      );
    }
  }
}

function checkValue(schema: JsonObject, keyword: string, value: unknown, at: readonly (string | number)[], walk: Walk) {
  if (keyword === 'pattern') {
    if (typeof value !== 'string') throw walk.refuse('"pattern" must be a string', at);
    checkPattern(value, at, walk);
  } else if (keyword === 'format' && typeof value === 'string' && REFUSED_FORMATS.has(value)) {
    throw walk.refuse(`format "${value}" is not allowed (${REFUSED_FORMATS.get(value)})`, at);
  } else if (keyword === 'uniqueItems' && value === true) {
    const { maxItems } = schema;
    if (typeof maxItems !== 'number' || maxItems > MAX_UNIQUE_ITEMS) {
      throw walk.refuse(
        `"uniqueItems" compares items pairwise: give "maxItems" of at most ${MAX_UNIQUE_ITEMS} beside it`,
        at,
      );
    }
  }
}

function checkPattern(pattern: string, at: readonly (string | number)[], walk: Walk): void {
  if (walk.patterns.has(pattern)) return;
  if (walk.patterns.size >= MAX_PATTERNS) {
    throw walk.refuse(`it has more than ${MAX_PATTERNS} distinct patterns; share them through "$defs"`, at);
  }
  const checked = checkLinearPattern(pattern);
  if ('problem' in checked)
    throw walk.refuse(`pattern ${JSON.stringify(pattern.slice(0, 200))} ${checked.problem}`, at);
  walk.patterns.set(pattern, checked.instructions);
  let total = 0;
  for (const instructions of walk.patterns.values()) total += instructions;
  if (total > MAX_PATTERN_INSTRUCTIONS_IN_ALL) {
    throw walk.refuse(
      `its patterns compile to ${total} instructions in all, more than ${MAX_PATTERN_INSTRUCTIONS_IN_ALL}: use fewer or simpler patterns`,
      at,
    );
  }
}

/** What a local `$ref` (`#`, `#/$defs/…` or `#/definitions/…` of the schema itself) points at. */
function resolveLocalRef(ref: unknown, at: readonly (string | number)[], walk: Walk): unknown {
  const local = typeof ref === 'string' && /^#(?:\/(?:\$defs|definitions)\/.+)?$/.test(ref);
  if (!local) {
    throw walk.refuse(
      `"$ref" ${JSON.stringify(String(ref).slice(0, 200))} is not local: only "#", "#/$defs/…" and "#/definitions/…" are allowed (nothing is loaded)`,
      at,
    );
  }
  let target: unknown = walk.root;
  for (const step of (ref as string).split('/').slice(1)) {
    let name: string;
    try {
      name = decodeURIComponent(step).replaceAll('~1', '/').replaceAll('~0', '~');
    } catch {
      throw walk.refuse(`"$ref" ${JSON.stringify(ref.slice(0, 200))} is not a valid JSON Pointer`, at);
    }
    target = isObject(target) && Object.hasOwn(target, name) ? target[name] : undefined;
  }
  return target;
}

/**
 * Follows which subschemas apply to one value, level by level of a payload
 * as deep as a store keeps: refuses references that loop back to the same
 * value without descending into it, and any level with more than
 * `MAX_SUBSCHEMAS_PER_VALUE` subschemas applying to one value (an upper
 * bound: the most over every property name or item at each level).
 */
function checkReferences(
  root: JsonObject,
  nodes: Map<object, SchemaNode>,
  refuse: (problem: string, at: readonly (string | number)[]) => WorkqError,
): void {
  const closure = (start: Map<object, number>): Map<object, number> => {
    const applied = new Map<object, number>();
    let visits = 0;
    const visit = (schema: object, times: number, stack: Set<object>) => {
      const node = nodes.get(schema);
      if (!node) return;
      if (++visits > MAX_SUBSCHEMAS_PER_VALUE) throw tooMany(node.at);
      if (stack.has(schema)) {
        throw refuse('its references apply this subschema to the same value without end', node.at);
      }
      const total = (applied.get(schema) ?? 0) + times;
      applied.set(schema, total);
      if (total > MAX_SUBSCHEMAS_PER_VALUE) throw tooMany(node.at);
      stack.add(schema);
      for (const next of node.inPlace) visit(next, times, stack);
      stack.delete(schema);
    };
    for (const [schema, times] of start) visit(schema, times, new Set());
    return applied;
  };
  const tooMany = (at: readonly (string | number)[]) =>
    refuse(`more than ${MAX_SUBSCHEMAS_PER_VALUE} subschemas would apply to one value of a payload`, at);
  let level = closure(new Map([[root, 1]]));
  for (let depth = 0; depth < MAX_PAYLOAD_DEPTH && level.size > 0; depth++) {
    const anyPart = new Map<object, number>();
    const byName = new Map<string, Map<object, number>>();
    for (const [schema, times] of level) {
      const node = nodes.get(schema) as SchemaNode;
      for (const part of node.anyPart) anyPart.set(part, (anyPart.get(part) ?? 0) + times);
      for (const [name, parts] of node.byName) {
        const named = byName.get(name) ?? new Map<object, number>();
        byName.set(name, named);
        for (const part of parts) named.set(part, (named.get(part) ?? 0) + times);
      }
    }
    const next = closure(anyPart);
    const mostByName = new Map<object, number>();
    for (const named of byName.values()) {
      for (const [schema, times] of closure(named)) {
        mostByName.set(schema, Math.max(mostByName.get(schema) ?? 0, times));
      }
    }
    for (const [schema, times] of mostByName) next.set(schema, (next.get(schema) ?? 0) + times);
    let total = 0;
    for (const times of next.values()) total += times;
    if (total > MAX_SUBSCHEMAS_PER_VALUE) throw tooMany(nodes.get(next.keys().next().value as object)?.at ?? []);
    level = next;
  }
}

/**
 * Where `value` first nests deeper than `maxDepth`, or whether its JSON text
 * passes `maxBytes` (estimated, from below), whichever the walk meets first;
 * `{}` when neither. Stops there: a schema far too large costs no more than
 * one within bounds.
 */
function measure(
  value: unknown,
  maxDepth: number,
  maxBytes: number,
): { tooDeep?: (string | number)[]; tooLarge?: true } {
  const stack: { value: unknown; at: (string | number)[] }[] = [{ value, at: [] }];
  let bytes = 0;
  for (let item = stack.pop(); item; item = stack.pop()) {
    if (typeof item.value === 'string') bytes += item.value.length + 2;
    else if (typeof item.value !== 'object' || item.value === null) bytes += 4;
    else {
      if (item.at.length >= maxDepth) return { tooDeep: item.at };
      for (const key in item.value) {
        bytes += key.length + 4;
        if (bytes > maxBytes) return { tooLarge: true };
        const child = (item.value as Record<string, unknown>)[key];
        stack.push({ value: child, at: [...item.at, Array.isArray(item.value) ? Number(key) : key] });
      }
    }
    if (bytes > maxBytes) return { tooLarge: true };
  }
  return {};
}

/** A location in a schema as a JSON Pointer fragment (`#/properties/name/pattern`). */
function pointerOf(at: readonly (string | number)[]): string {
  return `#${at.map((step) => `/${String(step).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('')}`;
}
