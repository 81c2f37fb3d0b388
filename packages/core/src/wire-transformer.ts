import superjson, { type SuperJSONResult } from 'superjson';
import { isPlainJson } from './plain-json.ts';

/**
 * The tRPC transformer of the queue server and the SDK: superjson's wire
 * format (`{ json, meta? }`), so any superjson client can talk to the server,
 * with a fast path for the common case. A value that is plain JSON — most
 * payloads, claimed batches and enqueue results — is sent as `{ json }`
 * without superjson's walk, and a message without `meta` is read back as it
 * is. Anything else (a `Date`, a `bigint`, a `Map`) goes through superjson.
 */
export const wireTransformer = {
  serialize(value: unknown): SuperJSONResult {
    return isPlainJson(value) ? { json: value as SuperJSONResult['json'] } : superjson.serialize(value);
  },
  deserialize<T = unknown>(payload: SuperJSONResult): T {
    if (typeof payload === 'object' && payload !== null && payload.meta === undefined) return payload.json as T;
    return superjson.deserialize<T>(payload);
  },
};
