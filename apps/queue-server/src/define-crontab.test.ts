import { defineCatalog, defineJob, isWorkqError } from '@workq/core';
import { parseCrontab } from '@workq/core/engine';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineCrontab } from './define-crontab.ts';

const jobs = defineCatalog({
  imageConvert: defineJob({
    version: 2,
    payload: z.object({ source: z.string().min(1), output: z.string().min(1) }),
    previous: {
      1: { payload: z.object({ source: z.string() }), upgrade: (p) => ({ ...p, output: `${p.source}.webp` }) },
    },
    defaults: { maxAttempts: 5, backoff: { type: 'exponential', delayMs: 1000 }, leaseMs: 30_000 },
  }),
  generateReport: defineJob({
    version: 1,
    payload: z.object({ accountId: z.string().min(1), kind: z.string(), from: z.string(), to: z.string() }),
    defaults: { leaseMs: 120_000, maxAttempts: 3, order: 'fifo' },
  }),
});

const report = { accountId: 'acct-7', kind: 'usage', from: '2026-01-01', to: '2026-01-31' } as const;

describe('defineCrontab', () => {
  it('pins each entry to its job’s current version and fills options from the catalog defaults', () => {
    const crontab = defineCrontab(jobs, [
      { cron: '0 3 * * *', name: 'generateReport', payload: report, options: { maxAttempts: 7 } },
      { cron: '*/30 * * * * *', name: 'imageConvert', payload: { source: 'a.png', output: 'a.webp' }, key: 'thumbs' },
    ]);
    expect(crontab).toEqual([
      {
        cron: '0 3 * * *',
        name: 'generateReport',
        payload: report,
        version: 1,
        options: { leaseMs: 120_000, maxAttempts: 7, order: 'fifo' },
      },
      {
        cron: '*/30 * * * * *',
        name: 'imageConvert',
        payload: { source: 'a.png', output: 'a.webp' },
        key: 'thumbs',
        version: 2,
        options: { maxAttempts: 5, backoff: { type: 'exponential', delayMs: 1000 }, leaseMs: 30_000 },
      },
    ]);
    // What it returns is a crontab the server accepts.
    expect(parseCrontab(crontab)).toHaveLength(2);
  });

  it('refuses a payload its job’s schema rejects, and a job the catalog lacks', () => {
    const refusal = (build: () => unknown) => {
      try {
        build();
      } catch (error) {
        if (isWorkqError(error)) return `${error.code}: ${error.message}`;
        throw error;
      }
      throw new Error('accepted');
    };
    expect(
      refusal(() =>
        defineCrontab(jobs, [{ cron: '0 3 * * *', name: 'generateReport', payload: { ...report, accountId: '' } }]),
      ),
    ).toMatch(/^VALIDATION: Crontab payload of "generateReport" is invalid:[\s\S]*accountId/);
    const unknown = [{ cron: '0 3 * * *', name: 'resizeVideo', payload: {} }] as never;
    expect(refusal(() => defineCrontab(jobs, unknown))).toMatch(/^UNKNOWN_JOB: .*"resizeVideo"/);
  });
});
