/**
 * This deployment's job catalog: the one declaration producers, consumers and
 * the server share. Change a payload only with a version bump and an upgrade.
 */
import { defineCatalog, defineJob } from '@workq/core';
import { z } from 'zod';

const imageFormat = z.enum(['jpeg', 'png', 'webp', 'avif']);

export const jobs = defineCatalog({
  /** Converts an image to another format and quality. */
  imageConvert: defineJob({
    version: 2,
    payload: z.object({
      source: z.string().min(1),
      output: z.string().min(1),
      format: imageFormat.default('webp'),
      quality: z.number().int().min(1).max(100).default(80),
    }),
    result: z.object({ bytes: z.number().int().nonnegative(), width: z.number().int().optional() }),
    previous: {
      1: {
        payload: z.object({ source: z.string().min(1), output: z.string().min(1) }),
        upgrade: (p) => ({ ...p, format: 'webp' as const, quality: 80 }),
      },
    },
    defaults: { maxAttempts: 5, backoff: { type: 'exponential', delayMs: 1000 }, leaseMs: 30_000 },
  }),

  /** Sends one transactional email. */
  sendEmail: defineJob({
    version: 1,
    payload: z.object({
      to: z.email(),
      subject: z.string().min(1).max(200),
      body: z.string().max(100_000),
      replyTo: z.email().optional(),
    }),
    result: z.object({ messageId: z.string() }),
    defaults: { priority: 10, maxAttempts: 8, backoff: { type: 'exponential', delayMs: 2000, maxDelayMs: 600_000 } },
  }),

  /** Builds a report for an account over a date range. */
  generateReport: defineJob({
    version: 1,
    payload: z.object({
      accountId: z.string().min(1),
      kind: z.enum(['usage', 'billing', 'audit']),
      from: z.iso.date(),
      to: z.iso.date(),
      notify: z.email().optional(),
    }),
    result: z.object({ url: z.string(), rows: z.number().int().nonnegative() }),
    defaults: { leaseMs: 120_000, maxAttempts: 3, order: 'fifo' },
  }),
});

export type Jobs = typeof jobs;
