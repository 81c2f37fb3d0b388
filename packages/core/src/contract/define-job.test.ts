import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { validationError } from '../../test/support/fixtures.ts';
import { defineCatalog, isValidJobName } from './define-catalog.ts';
import { defineJob } from './define-job.ts';

const payload = z.object({ a: z.string() });
// biome-ignore lint/suspicious/noExplicitAny: the tests below pass deliberately malformed specs.
const defineLoose = defineJob as (spec: any) => unknown;

describe('defineJob', () => {
  it('returns a frozen definition listing the versions it reads, oldest first', () => {
    const job = defineJob({
      version: 3,
      payload,
      previous: {
        1: { payload: z.object({}), upgrade: () => ({ a: 'from v1' }) },
        2: { payload: z.object({ a: z.string().optional() }), upgrade: (p) => ({ a: p.a ?? '' }) },
      },
      defaults: { priority: 2 },
    });
    expect(job.kind).toBe('workq.job');
    expect(job.version).toBe(3);
    expect(job.versions).toEqual([1, 2, 3]);
    expect(job.defaults).toEqual({ priority: 2 });
    expect(Object.isFrozen(job)).toBe(true);
    expect(Object.isFrozen(job.defaults)).toBe(true);
  });

  it('a job without previous versions reads only its own version', () => {
    const job = defineJob({ version: 4, payload });
    expect(job.versions).toEqual([4]);
    expect(job.result).toBeUndefined();
  });

  it('copies the caller’s defaults rather than freezing them', () => {
    const defaults = { maxAttempts: 3 };
    defineJob({ version: 1, payload, defaults });
    expect(Object.isFrozen(defaults)).toBe(false);
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects version %s', (version) => {
    expect(validationError(() => defineLoose({ version, payload })).message).toMatch(/integer >= 1/);
  });

  it('rejects versions that are not consecutive up to the current one, naming the missing one', () => {
    const upgrade = (p: unknown) => p;
    const error = validationError(() =>
      defineLoose({
        version: 4,
        payload,
        previous: { 1: { payload, upgrade }, 3: { payload, upgrade } },
      }),
    );
    expect(error.message).toMatch(/consecutive/);
    expect(error.message).toMatch(/version 2 is missing/);
    expect(
      validationError(() => defineLoose({ version: 3, payload, previous: { 1: { payload, upgrade } } })).message,
    ).toMatch(/consecutive/);
  });

  it('rejects a previous version that is not older than the current one', () => {
    const upgrade = (p: unknown) => p;
    expect(
      validationError(() => defineLoose({ version: 2, payload, previous: { 2: { payload, upgrade } } })).message,
    ).toMatch(/not an older version/);
    expect(
      validationError(() => defineLoose({ version: 2, payload, previous: { 0: { payload, upgrade } } })).message,
    ).toMatch(/not an older version/);
  });

  it('rejects a previous version without its upgrade or payload', () => {
    expect(validationError(() => defineLoose({ version: 2, payload, previous: { 1: { payload } } })).message).toMatch(
      /previous\[1\] needs both a "payload" schema and an "upgrade" function/,
    );
    expect(
      validationError(() => defineLoose({ version: 2, payload, previous: { 1: { upgrade: (p: unknown) => p } } }))
        .message,
    ).toMatch(/previous\[1\]/);
  });

  it('rejects a default lease outside LEASE_MS_LIMITS when the job is defined, not at its first enqueue', () => {
    for (const leaseMs of [99, 86_400_001, 1.5, Number.NaN, 9e15]) {
      expect(validationError(() => defineJob({ version: 1, payload, defaults: { leaseMs } })).message).toMatch(
        /defaults.leaseMs must be an integer from 100 to 86400000 \(100 ms to 24 h\)/,
      );
    }
    expect(defineJob({ version: 1, payload, defaults: { leaseMs: 86_400_000 } }).defaults.leaseMs).toBe(86_400_000);
  });

  it('keeps a time limit within TIMEOUT_MS_LIMITS and refuses any other when the job is defined', () => {
    expect(defineJob({ version: 1, payload, timeoutMs: 60_000 }).timeoutMs).toBe(60_000);
    expect(defineJob({ version: 1, payload }).timeoutMs).toBeUndefined();
    for (const timeoutMs of [99, 86_400_001, 1.5, Number.NaN, 0, -1]) {
      expect(validationError(() => defineJob({ version: 1, payload, timeoutMs })).message).toMatch(
        /timeoutMs must be an integer from 100 to 86400000 \(100 ms to 24 h\)/,
      );
    }
  });
});

describe('defineCatalog', () => {
  const job = defineJob({ version: 1, payload });

  it('returns a frozen copy of the catalog', () => {
    const input = { imageConvert: job, 'send-email.v2_x': job };
    const catalog = defineCatalog(input);
    expect(catalog).toEqual(input);
    expect(catalog).not.toBe(input);
    expect(Object.isFrozen(catalog)).toBe(true);
  });

  it.each(['', '1job', '_job', 'has space', 'slash/name', 'ümlaut', 'x'.repeat(101)])('rejects the name %j', (name) => {
    const error = validationError(() => defineCatalog({ [name]: job }));
    expect(error.message).toContain(`Job name "${name}" is not allowed`);
  });

  it('accepts names up to 100 characters of letters, digits, "_", "-" and "."', () => {
    for (const name of ['a', 'A9', 'image-convert', 'image_convert', 'image.convert', `a${'b'.repeat(99)}`]) {
      expect(isValidJobName(name)).toBe(true);
      expect(() => defineCatalog({ [name]: job })).not.toThrow();
    }
  });

  it('rejects an entry that is not a defineJob result', () => {
    const error = validationError(() => defineCatalog({ raw: { version: 1, payload } as never }));
    expect(error.message).toMatch(/Catalog entry "raw" is not a job: declare it with defineJob/);
    expect(validationError(() => defineCatalog({ nothing: undefined as never })).message).toMatch(/"nothing"/);
  });
});
