import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkCompatibility, snapshotCatalog } from './compatibility.ts';
import { defineCatalog } from './define-catalog.ts';
import { defineJob } from './define-job.ts';

const base = z.object({ source: z.string(), quality: z.number().int(), format: z.enum(['png', 'webp']) });
const committed = snapshotCatalog(defineCatalog({ convert: defineJob({ version: 1, payload: base }) }));

const problemsWith = (payload: z.ZodType) =>
  checkCompatibility(defineCatalog({ convert: defineJob({ version: 1, payload }) }), committed).map((p) => p.message);

describe('checkCompatibility', () => {
  it('passes an unchanged catalog and compatible additions', () => {
    expect(problemsWith(base)).toEqual([]);
    expect(problemsWith(base.extend({ note: z.string().optional() }))).toEqual([]);
    expect(problemsWith(base.extend({ retries: z.number().default(3) }))).toEqual([]);
    expect(problemsWith(base.extend({ format: z.enum(['png', 'webp', 'avif']) }))).toEqual([]);
  });

  it('catches a removed field', () => {
    expect(problemsWith(base.omit({ quality: true }))).toEqual([expect.stringContaining('field "quality" removed')]);
  });

  it('catches a changed type', () => {
    expect(problemsWith(base.extend({ quality: z.string() }))).toEqual([
      expect.stringContaining('quality: type changed from integer to string'),
    ]);
  });

  it('catches a new required field without a default', () => {
    expect(problemsWith(base.extend({ owner: z.string() }))).toEqual([
      expect.stringContaining('required field "owner" added without a default'),
    ]);
  });

  it('catches a removed enum value', () => {
    expect(problemsWith(base.extend({ format: z.enum(['png']) }))).toEqual([
      expect.stringContaining('enum value "webp" removed'),
    ]);
  });

  it('catches a version bump that drops the old version instead of upgrading it', () => {
    const bumped = defineCatalog({
      convert: defineJob({ version: 2, payload: base.extend({ owner: z.string() }) }),
    });
    expect(checkCompatibility(bumped, committed).map((p) => p.message)).toEqual([
      expect.stringContaining('version 1 was replaced by 2 without an upgrade'),
    ]);
  });

  it('accepts a version bump that keeps the old version with its upgrade', () => {
    const bumped = defineCatalog({
      convert: defineJob({
        version: 2,
        payload: base.extend({ owner: z.string() }),
        previous: { 1: { payload: base, upgrade: (p) => ({ ...p, owner: 'unknown' }) } },
      }),
    });
    expect(checkCompatibility(bumped, committed)).toEqual([]);
  });

  it('catches a removed job type and names it', () => {
    const problems = checkCompatibility(defineCatalog({}), committed);
    expect(problems).toEqual([
      expect.objectContaining({ job: 'convert', message: expect.stringContaining('was removed') }),
    ]);
  });
});
