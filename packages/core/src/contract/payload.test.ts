import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { WorkqError } from '../errors.ts';
import { defineJob } from './define-job.ts';
import { parseWith, payloadSchemaOf, upgradePayload } from './payload.ts';

async function caught(run: () => unknown): Promise<WorkqError> {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WorkqError);
    return error as WorkqError;
  }
  throw new Error('expected a WorkqError');
}

/** v1 `{ src }` → v2 `{ source }` → v3 `{ source, quality }`. */
const image = defineJob({
  version: 3,
  payload: z.object({ source: z.string().min(1), quality: z.number().int().default(80) }),
  previous: {
    1: { payload: z.object({ src: z.string() }), upgrade: (p) => ({ source: p.src }) },
    2: { payload: z.object({ source: z.string() }), upgrade: (p) => ({ source: p.source, quality: 50 }) },
  },
});

describe('parseWith', () => {
  const schema = z.object({ name: z.string(), size: z.object({ w: z.number() }) });

  it('returns the parsed output', () => {
    expect(parseWith(z.object({ n: z.number().default(3) }), {}, 'Payload')).toEqual({ n: 3 });
  });

  it('fails with VALIDATION listing every issue with its path', async () => {
    const error = await caught(() => parseWith(schema, { name: 5, size: { w: 'wide' } }, 'Payload of "resize"'));
    expect(error.code).toBe('VALIDATION');
    expect(error.message).toMatch(/^Payload of "resize" is invalid:\n/);
    expect(error.message).toContain('name');
    expect(error.message).toContain('size.w');
    const details = error.details as { path: string[]; message: string }[];
    expect(details.map((d) => d.path)).toEqual([['name'], ['size', 'w']]);
    for (const detail of details) expect(detail.message).toEqual(expect.any(String));
  });

  it('reports numeric path segments as strings', async () => {
    const error = await caught(() => parseWith(z.array(z.string()), ['ok', 2], 'List'));
    expect(error.details).toEqual([{ path: ['1'], message: expect.any(String) }]);
  });
});

describe('payloadSchemaOf', () => {
  it('returns the schema of the current or an older version', () => {
    expect(payloadSchemaOf('image', image, 3)).toBe(image.payload);
    expect(payloadSchemaOf('image', image, 1)).toBe(image.previous[1].payload);
  });

  it('fails with UNSUPPORTED_VERSION naming the versions it reads', async () => {
    const error = await caught(() => payloadSchemaOf('image', image, 4));
    expect(error.code).toBe('UNSUPPORTED_VERSION');
    expect(error.message).toContain('Job "image" has no version 4');
    expect(error.message).toContain('1, 2, 3');
  });
});

describe('upgradePayload', () => {
  it('runs every upgrade from v1 to the current version, parsing each step', () => {
    expect(upgradePayload('image', image, 1, { src: 'a.png' })).toEqual({ source: 'a.png', quality: 50 });
  });

  it('upgrades from the version before the current one', () => {
    expect(upgradePayload('image', image, 2, { source: 'b.png' })).toEqual({ source: 'b.png', quality: 50 });
  });

  it('parses a current-version payload, applying defaults', () => {
    expect(upgradePayload('image', image, 3, { source: 'c.png' })).toEqual({ source: 'c.png', quality: 80 });
  });

  it('rejects a payload that is invalid for the version it claims', async () => {
    const error = await caught(() => upgradePayload('image', image, 1, { source: 'a.png' }));
    expect(error.code).toBe('VALIDATION');
    expect(error.message).toContain('Payload of "image" v1 is invalid');
  });

  it('rejects an upgrade whose output is invalid for the next version, naming the step', async () => {
    // v1 → v2 accepts an empty source; v2 → v3 produces one, which v3 rejects.
    const error = await caught(() => upgradePayload('image', image, 1, { src: '' }));
    expect(error.code).toBe('VALIDATION');
    expect(error.message).toContain('Upgrade of "image" v2 to v3 is invalid');
    expect(error.details).toEqual([{ path: ['source'], message: expect.any(String) }]);
  });

  it('fails with UNSUPPORTED_VERSION for a version the definition does not read', async () => {
    expect((await caught(() => upgradePayload('image', image, 7, {}))).code).toBe('UNSUPPORTED_VERSION');
  });
});
