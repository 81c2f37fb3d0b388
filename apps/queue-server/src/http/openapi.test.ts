import { toPayloadJsonSchema } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openApiDocument } from './openapi.ts';

/** Every `$ref` in `value`, as written. */
function refsIn(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refsIn);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) =>
    key === '$ref' && typeof item === 'string' ? [item] : refsIn(item),
  );
}

/** What a JSON pointer into the document names; `undefined` when nothing is there. */
function resolve(document: Record<string, unknown>, pointer: string): unknown {
  const tokens = pointer.replace(/^#\/?/, '').split('/').filter(Boolean);
  return tokens.reduce<unknown>(
    (node, token) => (node as Record<string, unknown> | undefined)?.[token.replace(/~1/g, '/').replace(/~0/g, '~')],
    document,
  );
}

describe('openApiDocument', () => {
  it('describes the enqueue options idempotencyUntil and debounce.mode with their values', () => {
    const schemas = (openApiDocument([]).components as { schemas: Record<string, unknown> }).schemas;
    const options = schemas.EnqueueOptions as { properties: Record<string, { enum?: string[]; properties?: object }> };
    expect(options.properties.idempotencyUntil).toMatchObject({ enum: ['pruned', 'finished'] });
    expect(options.properties.debounce?.properties).toMatchObject({
      mode: { enum: ['replace', 'preserveRunAt', 'keepFirst'] },
    });
  });

  it("points a payload schema's own references ($defs and the root) at components of the document", () => {
    const tree: z.ZodType = z.object({
      label: z.string(),
      get children() {
        return z.array(tree);
      },
    });
    const document = openApiDocument([
      { name: 'indexTree', payloads: [{ version: 1, jsonSchema: toPayloadJsonSchema(z.object({ root: tree })) }] },
      { name: 'walk', payloads: [{ version: 3, jsonSchema: toPayloadJsonSchema(tree) }] },
    ]);
    const refs = refsIn(document);
    expect(refs).toEqual(expect.arrayContaining(['#/components/schemas/walk.v3.payload']));
    for (const ref of refs) expect(resolve(document, ref), ref).toBeDefined();
    const schemas = (document.components as { schemas: Record<string, Record<string, unknown>> }).schemas;
    expect(schemas['indexTree.v1.payload']).not.toHaveProperty('$defs');
    expect(schemas['indexTree.v1.payload']).not.toHaveProperty('$schema');
  });
});
