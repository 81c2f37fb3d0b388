import superjson, { type SuperJSONResult } from 'superjson';
import { WorkqError } from './errors.ts';
import { isPlainJson } from './plain-json.ts';

/**
 * The tRPC transformer of the queue server and the SDK: superjson's wire
 * format (`{ json, meta? }`), so any superjson client can talk to the server,
 * with a fast path for the common case. A value that is plain JSON — most
 * payloads, claimed batches and enqueue results — is sent as `{ json }`
 * without superjson's walk, and a message without `meta` is read back as it
 * is. An object plain but for `Date`s among its own values (a claim, which
 * carries its worker's start time) is written and read in superjson's form
 * without its walk too. Anything else (a nested `Date`, a `bigint`, a `Map`)
 * goes through superjson.
 *
 * What it reads is bounded before anything is decoded (`checkWireMeta`), so
 * no message, however it is built, holds the event loop: a `bigint` is read
 * from at most 4,096 digits (parsing 4 M digits took 2.6 s), a `Date` from at
 * most 64 characters, a RegExp or URL from at most 4,096 / 8,192; a path in
 * `meta` has at most `MAX_WIRE_DEPTH` segments; and `meta.referentialEqualities`
 * is ignored: superjson writes every shared value out in `json` anyway, and
 * honouring it would let a few hundred bytes stand for a graph whose walk
 * never ends (each level two references to the one below).
 */
export const wireTransformer = {
  serialize(value: unknown): SuperJSONResult {
    if (isPlainJson(value)) return { json: value as SuperJSONResult['json'] };
    return withTopLevelDates(value) ?? superjson.serialize(value);
  },
  deserialize<T = unknown>(payload: SuperJSONResult): T {
    if (typeof payload === 'object' && payload !== null && payload.meta === undefined) return payload.json as T;
    if (typeof payload !== 'object' || payload === null || typeof payload.meta !== 'object' || payload.meta === null) {
      return superjson.deserialize<T>(payload);
    }
    checkWireMeta(payload);
    const dated = readTopLevelDates(payload);
    if (dated !== undefined) return dated as T;
    const { referentialEqualities: _ignored, ...meta } = payload.meta;
    return superjson.deserialize<T>({ json: payload.json, meta });
  },
};

/**
 * superjson's message for a plain object whose values are plain JSON or valid
 * `Date`s (a claim carries its worker's start time beside a batch of acks),
 * written without superjson's walk of the rest: each date as its ISO text,
 * annotated `['Date']` under its key. `undefined` for any other value.
 */
function withTopLevelDates(value: unknown): SuperJSONResult | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return undefined;
  const json: Record<string, unknown> = {};
  const values: Record<string, ['Date']> = {};
  let dates = 0;
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (item instanceof Date) {
      if (Number.isNaN(item.getTime()) || !isPlainKey(key)) return undefined;
      json[key] = item.toISOString();
      values[key] = ['Date'];
      dates++;
    } else if (item === undefined || isPlainJson(item, 1)) {
      json[key] = item;
    } else {
      return undefined;
    }
  }
  return dates === 0 ? undefined : ({ json, meta: { values, v: 1 } } as SuperJSONResult);
}

/**
 * What superjson reads from a checked message whose only annotations are
 * `Date`s at the top level of an object: a shallow copy with those dates
 * made. `undefined` for any other message, which superjson then reads.
 */
function readTopLevelDates(payload: SuperJSONResult): unknown {
  const { json, meta } = payload;
  const values = meta?.values;
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  if (typeof values !== 'object' || values === null || Array.isArray(values)) return undefined;
  const read: Record<string, unknown> = { ...json };
  for (const [key, tree] of Object.entries(values)) {
    const text = read[key];
    const date = Array.isArray(tree) && tree.length === 1 && tree[0] === 'Date';
    if (!date || !isPlainKey(key) || !Object.hasOwn(json, key) || typeof text !== 'string') return undefined;
    read[key] = new Date(text);
  }
  return read;
}

/** A key superjson writes in `meta` as it is: one without a dot or a backslash, which it escapes. */
function isPlainKey(key: string): boolean {
  return !key.includes('.') && !key.includes('\\');
}

/** Most segments of a path in superjson's `meta`: deeper than any value a job may hold (`MAX_STORED_DEPTH`, 64). */
export const MAX_WIRE_DEPTH = 256;

/** Longest text (in UTF-16 code units) each costly superjson type is decoded from. */
const MAX_SCALAR_CHARS: Readonly<Record<string, { chars: number; what: string }>> = {
  bigint: { chars: 4_096, what: 'digits' },
  Date: { chars: 64, what: 'characters' },
  regexp: { chars: 4_096, what: 'characters' },
  URL: { chars: 8_192, what: 'characters' },
};

type MetaTree = unknown;

/**
 * Refuses, before superjson decodes anything, a message whose `meta` would
 * make it decode for long: `PAYLOAD_TOO_LARGE` for a bigint, Date, RegExp or
 * URL longer than its bound, `VALIDATION` for a path in `meta` deeper than
 * `MAX_WIRE_DEPTH`. Walks `meta.values` as superjson does, without recursion.
 */
export function checkWireMeta(payload: SuperJSONResult): void {
  const values = payload.meta?.values as MetaTree;
  if (values === undefined || values === null) return;
  const legacyPaths = (payload.meta?.v ?? 0) < 1;
  const pending: { tree: MetaTree; node: unknown; depth: number }[] = [{ tree: values, node: payload.json, depth: 0 }];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const { tree, node, depth } = item;
    const children = Array.isArray(tree) ? tree[1] : tree;
    if (Array.isArray(tree)) checkScalar(tree[0], node);
    if (typeof children !== 'object' || children === null) continue;
    for (const [key, subtree] of Object.entries(children)) {
      const path = splitPath(key, legacyPaths);
      if (depth + path.length > MAX_WIRE_DEPTH) {
        throw new WorkqError('VALIDATION', `The message nests deeper than ${MAX_WIRE_DEPTH} levels.`);
      }
      pending.push({ tree: subtree, node: valueAt(node, path), depth: depth + path.length });
    }
  }
}

function checkScalar(annotation: unknown, value: unknown): void {
  if (typeof annotation !== 'string' || typeof value !== 'string') return;
  const bound = MAX_SCALAR_CHARS[annotation];
  if (bound && value.length > bound.chars) {
    throw new WorkqError(
      'PAYLOAD_TOO_LARGE',
      `A ${annotation} in the message has ${value.length} ${bound.what}; at most ${bound.chars} are accepted.`,
    );
  }
}

/** A path of superjson's `meta` in segments, as superjson reads it (`\.` and `\\` escapes from version 1). */
function splitPath(path: string, legacy: boolean): string[] {
  if (legacy || !path.includes('\\')) return path.split('.');
  const segments: string[] = [];
  let segment = '';
  for (let i = 0; i < path.length; i++) {
    const char = path[i];
    if (char === '\\' && (path[i + 1] === '.' || path[i + 1] === '\\')) {
      segment += path[++i];
    } else if (char === '.') {
      segments.push(segment);
      segment = '';
    } else {
      segment += char;
    }
  }
  segments.push(segment);
  return segments;
}

function valueAt(node: unknown, path: readonly string[]): unknown {
  let current = node;
  for (const segment of path) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}
