import { LEASE_TOKEN_MAX_CHARS } from '@workq/core';
import { toStoredText } from '@workq/core/engine';
import { z } from 'zod';
import { JOB_ID_MAX_CHARS, lease } from './inputs.ts';

/** A completion as a worker sends it: a held job's lease and the job's result. */
export const completion = lease.extend({ result: z.unknown() });

/** A completion as the router reads it. */
export type Completion = z.output<typeof completion>;

/**
 * `schema`, an object schema whose field `key` is an array of `completion`s, as a tRPC input parser that
 * reads that array without zod when it has the shape it nearly always has (`plainCompletions`), and the
 * rest with `schema` less that field. Anything else goes to `schema` whole, so a refusal reads exactly as
 * zod words it. The answer is the same either way: the claim's and the ack's inputs carry a completion per
 * job, where zod's checks of each cost more than the rest of the call's parse.
 */
export function withPlainCompletions<Shape extends z.ZodRawShape, Key extends keyof Shape & string>(
  schema: z.ZodObject<Shape>,
  key: Key,
  /** Fewest completions the field takes; an absent field reads as `[]` when 0. */
  minItems: 0 | 1,
) {
  const rest = schema.omit({ [key]: true } as never);
  return {
    _input: undefined as unknown as z.input<typeof schema>,
    _output: undefined as unknown as z.output<typeof schema>,
    parse(value: unknown): z.output<typeof schema> {
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        const items = (value as Record<string, unknown>)[key];
        const completions = items === undefined && minItems === 0 ? [] : plainCompletions(items, minItems);
        if (completions !== undefined) {
          return { ...(rest.parse(value) as object), [key]: completions } as z.output<typeof schema>;
        }
      }
      return schema.parse(value);
    },
  };
}

/**
 * `value` read as `z.array(completion).min(minItems)` reads it, when every item is an object with a
 * well-formed `id` and `leaseToken` (the checks of `jobId` and `leaseToken`) and a `result`: each as a new
 * object of those three. `undefined` for anything else.
 */
export function plainCompletions(value: unknown, minItems: number): Completion[] | undefined {
  if (!Array.isArray(value) || value.length < minItems) return undefined;
  const read: Completion[] = new Array(value.length);
  for (let index = 0; index < value.length; index++) {
    const item: unknown = value[index];
    // zod takes a `result` of any value, but not none.
    if (typeof item !== 'object' || item === null || Array.isArray(item) || !('result' in item)) return undefined;
    const { id, leaseToken, result } = item as Record<string, unknown>;
    if (!isStorableText(id, JOB_ID_MAX_CHARS) || !isStorableText(leaseToken, LEASE_TOKEN_MAX_CHARS)) return undefined;
    read[index] = { id, leaseToken, result };
  }
  return read;
}

function isStorableText(text: unknown, maxChars: number): text is string {
  return typeof text === 'string' && text.length >= 1 && text.length <= maxChars && toStoredText(text) === text;
}
