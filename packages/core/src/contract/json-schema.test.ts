import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toPayloadJsonSchema, uncheckedConstraintsOf } from './json-schema.ts';

describe('payload JSON Schemas', () => {
  it('leaves a schema JSON Schema fully expresses as it was: nothing listed, the same fingerprint as before', () => {
    const schema = toPayloadJsonSchema(z.object({ to: z.email(), tags: z.array(z.string().min(1)).max(3) }));
    expect(schema).not.toHaveProperty('x-workq-unchecked');
    expect(uncheckedConstraintsOf(schema)).toEqual([]);
  });

  it('lists, by payload path, each constraint it cannot express', () => {
    const schema = toPayloadJsonSchema(
      z
        .object({
          code: z.string().refine((code) => code.startsWith('A')),
          label: z
            .string()
            .transform((label) => label.trim())
            .pipe(z.string().max(5)),
          items: z.array(z.object({ at: z.date() })),
        })
        .superRefine(() => undefined),
    );
    expect(uncheckedConstraintsOf(schema)).toEqual([
      { path: '(root)', constraint: 'refinement (.refine, .superRefine or .check)' },
      { path: 'code', constraint: 'refinement (.refine, .superRefine or .check)' },
      { path: 'items[].at', constraint: 'type Date (not JSON; plain HTTP cannot send one)' },
      { path: 'label', constraint: 'the schema piped into (.pipe)' },
      { path: 'label', constraint: 'transform (.transform)' },
    ]);
  });

  it('accepts any input where Zod does (coerced, preprocessed, caught), so no payload the SDK accepts is refused', () => {
    const schema = toPayloadJsonSchema(
      z.object({
        quantity: z.coerce.number().int(),
        amount: z.preprocess((value) => Number(value), z.number()),
        mode: z.enum(['a', 'b']).catch('a'),
        name: z.string(),
      }),
    ) as { properties: Record<string, unknown>; required: string[] };
    expect(schema.properties).toMatchObject({ quantity: {}, amount: {}, mode: { default: 'a' } });
    expect(schema.properties.quantity).toEqual({});
    expect(schema.required).toEqual(['name']);
    expect(uncheckedConstraintsOf(schema).map((item) => item.path)).toEqual(['amount', 'quantity']);
  });

  it('reads no constraints from a schema that lists none, or lists them malformed', () => {
    expect(uncheckedConstraintsOf(undefined)).toEqual([]);
    expect(uncheckedConstraintsOf({ 'x-workq-unchecked': 'nope' })).toEqual([]);
    expect(uncheckedConstraintsOf({ 'x-workq-unchecked': [{ path: 1 }, { path: 'a', constraint: 'b' }] })).toEqual([
      { path: 'a', constraint: 'b' },
    ]);
  });
});
