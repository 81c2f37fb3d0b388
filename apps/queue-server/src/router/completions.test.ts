import { LEASE_TOKEN_MAX_CHARS } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { completion, plainCompletions, withPlainCompletions } from './completions.ts';

const claimLike = z.object({ name: z.string().min(1), complete: z.array(completion).default([]) });
const ackLike = z.object({ items: z.array(completion).min(1), name: z.string().optional() });
const claim = withPlainCompletions(claimLike, 'complete', 0);
const acks = withPlainCompletions(ackLike, 'items', 1);

/** What zod makes of `value`: its output, or its refusal's issues. */
function byZod(schema: z.ZodType, value: unknown) {
  const parsed = schema.safeParse(value);
  return parsed.success ? { value: parsed.data } : { issues: parsed.error.issues };
}

function byParser(parser: { parse(value: unknown): unknown }, value: unknown) {
  try {
    return { value: parser.parse(value) };
  } catch (error) {
    return { issues: (error as z.ZodError).issues };
  }
}

const ack = { id: 'job-1', leaseToken: 'token-1', result: { bytes: 1 } };

describe('withPlainCompletions', () => {
  it.each([
    ['a claim without acks', { name: 'mail' }],
    [
      'a claim with acks, an unknown key stripped',
      { name: 'mail', complete: [ack, { ...ack, id: 'job-2', extra: 1 }] },
    ],
    ['an ack without a result', { name: 'mail', complete: [{ id: 'job-1', leaseToken: 't' }] }],
    [
      'an ack whose result is undefined',
      { name: 'mail', complete: [{ id: 'job-1', leaseToken: 't', result: undefined }] },
    ],
    ['a claim refused for its name', { name: '', complete: [ack] }],
    ['an id too long', { name: 'mail', complete: [{ ...ack, id: 'x'.repeat(65) }] }],
    ['an empty lease token', { name: 'mail', complete: [{ ...ack, leaseToken: '' }] }],
    [
      'a lease token too long',
      { name: 'mail', complete: [{ ...ack, leaseToken: 't'.repeat(LEASE_TOKEN_MAX_CHARS + 1) }] },
    ],
    ['an id with a NUL character', { name: 'mail', complete: [{ ...ack, id: 'a\u0000b' }] }],
    ['an id that is a number', { name: 'mail', complete: [{ ...ack, id: 7 }] }],
    ['an ack that is an array', { name: 'mail', complete: [[ack]] }],
    ['acks that are not an array', { name: 'mail', complete: { 0: ack } }],
    ['not an object', [ack]],
  ])('reads %s as zod does', (_what, value) => {
    expect(byParser(claim, value)).toEqual(byZod(claimLike, value));
  });

  it('holds an ack batch to at least one completion, as zod does', () => {
    for (const value of [{ items: [] }, {}, { items: [ack], name: 'mail' }]) {
      expect(byParser(acks, value)).toEqual(byZod(ackLike, value));
    }
  });

  it('reads well-formed completions without zod, and nothing else', () => {
    expect(plainCompletions([ack], 1)).toEqual([ack]);
    expect(plainCompletions([], 1)).toBeUndefined();
    expect(plainCompletions([{ ...ack, leaseToken: 'lone \uD800' }], 0)).toBeUndefined();
  });
});
