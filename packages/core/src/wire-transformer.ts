import superjson, { type SuperJSONResult } from 'superjson';
import { WorkqError } from './errors.ts';
import { isPlainJson } from './plain-json.ts';

/**
 * The tRPC transformer of the queue server and the SDK: superjson's wire
 * format (`{ json, meta? }`), so any superjson client can talk to the server,
 * with a fast path for the common case. A value that is plain JSON — most
 * payloads, claimed batches and enqueue results — is sent as `{ json }`
 * without superjson's walk, and a message without `meta` is read back as it
 * is. Anything else (a `Date`, a `bigint`, a `Map`) goes through superjson.
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
    return isPlainJson(value) ? { json: value as SuperJSONResult['json'] } : superjson.serialize(value);
  },
  deserialize<T = unknown>(payload: SuperJSONResult): T {
    if (typeof payload === 'object' && payload !== null && payload.meta === undefined) return payload.json as T;
    if (typeof payload !== 'object' || payload === null || typeof payload.meta !== 'object' || payload.meta === null) {
      return superjson.deserialize<T>(payload);
    }
    checkWireMeta(payload);
    const { referentialEqualities: _ignored, ...meta } = payload.meta;
    return superjson.deserialize<T>({ json: payload.json, meta });
  },
};

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
