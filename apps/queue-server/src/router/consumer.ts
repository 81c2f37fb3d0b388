import { isWorkqError, type TraceContext, WorkqError } from '@workq/core';
import { type ClaimedJob, toStoredValue } from '@workq/core/engine';
import { z } from 'zod';
import { moveJob } from '../app/enqueue.ts';
import { checkBatchSize, checkPayloads } from '../app/payloads.ts';
import type { ServerServices } from '../app/services.ts';
import { stopScopeOf } from '../auth.ts';
import { enqueueOptions, jobName, lease, leaseLengthMs, storableText, version } from './inputs.ts';
import { leaseProcedure, scoped } from './scoped.ts';
import { authedProcedure, router } from './trpc.ts';

const completion = lease.extend({ result: z.unknown() });

/**
 * A leased job as the claim response carries it: the lease expiry as epoch
 * milliseconds, so a batch of plain-JSON payloads travels as plain JSON, and
 * the trace context the job was created in only when it has one.
 */
export type WireClaimedJob = Omit<ClaimedJob, 'leaseExpiresAt' | 'runAt' | 'traceContext'> & {
  leaseExpiresAtMs: number;
  traceContext?: TraceContext;
};

/** Built field by field, not by rest and spread: it runs for every claimed job, where a spread copy is far slower. */
function toWireJob(job: ClaimedJob): WireClaimedJob {
  const wire: WireClaimedJob = {
    id: job.id,
    name: job.name,
    version: job.version,
    payload: job.payload,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    leaseToken: job.leaseToken,
    leaseMs: job.leaseMs,
    progress: job.progress,
    leaseExpiresAtMs: job.leaseExpiresAt.getTime(),
  };
  if (job.traceContext !== null) wire.traceContext = job.traceContext;
  return wire;
}

type Ack = z.infer<typeof completion>;

/** The size of a result as stored, in bytes of UTF-8 JSON (a bigint, Date or Map counts with its encoding). */
function storedBytes(ack: Ack): number {
  const text = JSON.stringify(toStoredValue(ack.result, `Result of job ${ack.id}`));
  return text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
}

/** Checks a batch of acks before any goes to the store: its size, and that each result can be stored. */
function checkAcks(services: ServerServices, items: readonly Ack[]): { ack: Ack; bytes: number }[] {
  checkBatchSize(items.length, services.options.limits.maxBatchSize, 'complete');
  const { maxResultBytes } = services.options.limits;
  return items.map((ack) => ({ ack, bytes: storedBytes(ack) })).filter(({ bytes }) => bytes > maxResultBytes);
}

/**
 * Ends each job whose result is over `maxResultBytes` dead, its error naming
 * the limit, and stores none of the result: retrying would make the same
 * result again, so the job must not run forever. Fenced by the lease (a job
 * whose lease is lost already is left as it is). Resolves to the refusal the
 * worker gets, `PAYLOAD_TOO_LARGE`.
 */
async function failOversized(services: ServerServices, oversized: { ack: Ack; bytes: number }[]): Promise<WorkqError> {
  const maxBytes = services.options.limits.maxResultBytes;
  await Promise.all(
    oversized.map(({ ack, bytes }) =>
      services.engine
        .fail(
          { id: ack.id, leaseToken: ack.leaseToken },
          {
            message: `The result was ${bytes} bytes, over the server's limit of ${maxBytes} (maxResultBytes), so it was not stored and the job was not retried. Store large results elsewhere and return a reference to them.`,
            permanent: true,
          },
        )
        .catch((error: unknown) => {
          if (!isWorkqError(error, 'LEASE_LOST')) throw error;
        }),
    ),
  );
  const [first] = oversized as [{ ack: Ack; bytes: number }];
  return new WorkqError(
    'PAYLOAD_TOO_LARGE',
    `The result of job ${first.ack.id} is ${first.bytes} bytes; the limit is ${maxBytes} (limits.maxResultBytes, --max-result-bytes)${oversized.length > 1 ? `, and ${oversized.length - 1} more results are over it too` : ''}. Such jobs end dead with that error, their results not stored. Store large results elsewhere and return a reference to them.`,
  );
}

/**
 * The acks a claim carries that can go to the store: none when any cannot be
 * stored, and never one over `maxResultBytes` (its job is failed here, and
 * the claim answers `acksFailed`, so the worker sends its acks again on their
 * own and hears `PAYLOAD_TOO_LARGE`).
 */
async function storableAcks(services: ServerServices, items: readonly Ack[]): Promise<{ acks: Ack[]; valid: boolean }> {
  let oversized: { ack: Ack; bytes: number }[];
  try {
    oversized = checkAcks(services, items);
  } catch {
    return { acks: [], valid: false };
  }
  if (oversized.length === 0) return { acks: [...items], valid: true };
  await failOversized(services, oversized);
  const refused = new Set(oversized.map(({ ack }) => ack));
  return { acks: items.filter((ack) => !refused.has(ack)), valid: false };
}

/** Observes, for the metrics, the wait of each job a claim leased, and the lease of each carried ack it completed. */
function observeClaim(
  services: ServerServices,
  name: string,
  answer: { jobs: readonly ClaimedJob[]; completed: readonly string[] },
  acks: readonly z.infer<typeof completion>[],
): void {
  services.metrics.observeClaimed(answer.jobs, Date.now());
  // A worker claims one job type, and carries the acks of that type.
  observeAcks(services, name, acks, answer.completed);
}

function observeAcks(
  services: ServerServices,
  name: string,
  acks: readonly z.infer<typeof completion>[],
  completedIds: readonly string[],
): void {
  if (completedIds.length === 0) return;
  const completed = new Set(completedIds);
  const nowMs = Date.now();
  for (const ack of acks) {
    if (completed.has(ack.id)) services.metrics.observeHandled(name, ack.leaseToken, 'completed', nowMs);
  }
}

export const consumerRouter = router({
  /**
   * First completes the held jobs in `complete` (acks riding along, saving a
   * round trip), then leases up to `limit` jobs of one type within the
   * consumer's versions. When none is ready, waits up to `waitMs` for a
   * wake-up instead of returning at once.
   */
  claim: authedProcedure
    .input(
      z.object({
        name: jobName,
        minVersion: version.default(1),
        maxVersion: version,
        limit: z.number().int().min(1),
        workerId: storableText(1, 64),
        host: storableText(0, 255).optional(),
        /** The worker's process id and start time, for the worker registry. */
        pid: z
          .number()
          .int()
          .min(0)
          .max(2 ** 31 - 1)
          .optional(),
        startedAt: z.date().optional(),
        waitMs: z.number().int().min(0).default(0),
        leaseMs: leaseLengthMs.optional(),
        complete: z.array(completion).default([]),
      }),
    )
    .use(scoped('consume', (input) => input.name))
    .mutation(
      async ({
        ctx,
        input,
        signal,
      }): Promise<{
        jobs: WireClaimedJob[];
        completed: string[];
        acksFailed: boolean;
        concurrencyLimited: boolean;
      }> => {
        const { dispatcher, options } = ctx.services;
        checkBatchSize(input.limit, options.limits.maxBatchSize, 'claim');
        const carried = await storableAcks(ctx.services, input.complete);
        const answer = await dispatcher.claim(
          {
            name: input.name,
            minVersion: input.minVersion,
            maxVersion: input.maxVersion,
            limit: input.limit,
            workerId: input.workerId,
            host: input.host ?? ctx.remoteAddress,
            pid: input.pid ?? null,
            startedAt: input.startedAt ?? null,
            // Acks it could not take are answered at once, not after a long poll, so the worker hears why soon.
            waitMs: carried.valid ? input.waitMs : 0,
            leaseMs: input.leaseMs,
            acks: carried.acks,
          },
          signal ?? new AbortController().signal,
        );
        observeClaim(ctx.services, input.name, answer, input.complete);
        return {
          jobs: answer.jobs.map(toWireJob),
          completed: answer.completed,
          acksFailed: answer.acksFailed || !carried.valid,
          concurrencyLimited: answer.concurrencyLimited,
        };
      },
    ),

  /**
   * For a closing worker: its claims waiting on this server answer at once
   * (with any jobs handed to them), and its claims arriving in the next
   * seconds do not wait. Resolves to how many of its claims were in progress
   * here; with none, they are on another server, and the worker drops them.
   * Only claims of job types the caller's token may consume are touched.
   */
  stopWaiting: leaseProcedure.input(z.object({ workerId: storableText(1, 64) })).mutation(({ ctx, input }) => {
    return { claims: ctx.services.dispatcher.stopWaiting(input.workerId, stopScopeOf(ctx.principal)) };
  }),

  /**
   * Completes a batch of held jobs; a lost lease fails only its own item. `name`, the jobs' type, labels
   * the handler duration metric; without it the batch is not observed there.
   */
  complete: leaseProcedure
    .input(z.object({ items: z.array(completion).min(1), name: jobName.optional() }))
    .mutation(async ({ ctx, input }) => {
      const oversized = checkAcks(ctx.services, input.items);
      if (oversized.length > 0) {
        // The others complete as asked; the answer is the refusal of the oversized ones.
        const refused = await failOversized(ctx.services, oversized);
        const rest = input.items.filter((item) => !oversized.some(({ ack }) => ack === item));
        if (rest.length > 0) await ctx.services.dispatcher.complete(rest, input.name);
        throw refused;
      }
      const outcomes = await ctx.services.dispatcher.complete(input.items, input.name);
      if (input.name !== undefined) {
        const completed = outcomes.filter((o) => o.ok).map((o) => o.id);
        observeAcks(ctx.services, input.name, input.items, completed);
      }
      return outcomes;
    }),

  /**
   * Records a failed attempt: its message, and the handler's error class and stack when the worker sends them
   * (kept cut to `ERROR_HISTORY_LIMITS`). The job is retried after its backoff, or ends dead when `permanent`
   * or out of attempts.
   */
  fail: leaseProcedure
    .input(
      lease.extend({
        message: z.string().max(10_000),
        permanent: z.boolean().default(false),
        errorName: z.string().max(1_000).optional(),
        stack: z.string().max(64_000).optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const { id, leaseToken, message, permanent, errorName, stack } = input;
      const status = await ctx.services.engine.fail(
        { id, leaseToken },
        { message, permanent, ...(errorName ? { errorName } : {}), ...(stack ? { stack } : {}) },
      );
      const outcome = status.state === 'dead' ? 'dead' : 'retry';
      ctx.services.metrics.failed.inc({ outcome });
      ctx.services.metrics.observeHandled(status.name, input.leaseToken, outcome, Date.now());
      return { state: status.state, runAt: status.runAt, attempts: status.attempts };
    }),

  /**
   * Gives held jobs of one type back unstarted, ready again in their place with their attempt not counted:
   * for a worker that, by the time it could start them, finds their leases expired or about to expire.
   * Fenced: a job whose lease is lost already is left as it is. Resolves to the ids released.
   */
  release: authedProcedure
    .input(z.object({ name: jobName, items: z.array(lease).min(1) }))
    .use(scoped('consume', (input) => input.name))
    .mutation(({ ctx, input }) => {
      checkBatchSize(input.items.length, ctx.services.options.limits.maxBatchSize, 'release');
      const { name } = input;
      return ctx.services.engine.release(input.items.map(({ id, leaseToken }) => ({ id, leaseToken, name })));
    }),

  /**
   * Extends a batch of leases; an item whose lease is lost (expired, cancelled) comes back `ok: false`.
   * `workerId` names the worker extending them, which the worker registry then counts as seen.
   */
  extend: leaseProcedure
    .input(
      z.object({
        items: z.array(lease.extend({ leaseMs: leaseLengthMs.optional() })).min(1),
        workerId: storableText(1, 64).optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      checkBatchSize(input.items.length, ctx.services.options.limits.maxBatchSize, 'extend');
      // Presence is bookkeeping: a store that cannot write it must not cost the worker its leases.
      if (input.workerId) ctx.services.dispatcher.presence.touched(input.workerId).catch(() => undefined);
      return Promise.all(
        input.items.map(async ({ id, leaseToken, leaseMs }) => {
          try {
            const { leaseExpiresAt } = await ctx.services.engine.extend({ id, leaseToken }, leaseMs);
            return { id, ok: true as const, leaseExpiresAt };
          } catch (error) {
            if (isWorkqError(error, 'LEASE_LOST')) return { id, ok: false as const };
            throw error;
          }
        }),
      );
    }),

  progress: leaseProcedure
    .input(lease.extend({ progress: z.number().min(0).max(100) }))
    .mutation(async ({ ctx, input }) => {
      await ctx.services.engine.progress({ id: input.id, leaseToken: input.leaseToken }, input.progress);
      return true;
    }),

  /**
   * Replaces the held job's payload, written in `version` of its type and
   * checked against that version's registered schema, so the job's later
   * attempts start from it. Fenced by the lease.
   */
  updatePayload: authedProcedure
    .input(lease.extend({ name: jobName, version, payload: z.unknown() }))
    .use(scoped('consume', (input) => input.name))
    .mutation(async ({ ctx, input }) => {
      const { id, leaseToken, name, payload } = input;
      await checkPayloads(ctx.services, name, input.version, [payload]);
      await ctx.services.engine.updatePayload({ id, leaseToken }, { name, version: input.version, payload });
      return true;
    }),

  /** Atomically ends the held job and enqueues `next` in its place (pipelines). */
  moveTo: leaseProcedure
    .input(
      lease.extend({
        next: z.object({ name: jobName, version, payload: z.unknown(), options: enqueueOptions }),
      }),
    )
    .use(
      scoped(
        ['produce', 'consume'],
        (input) => input.next.name,
        (name) => `This token may not move jobs to "${name}": it needs produce:${name} or consume:${name}.`,
      ),
    )
    .mutation(({ ctx, input }) => moveJob(ctx.services, { id: input.id, leaseToken: input.leaseToken }, input.next)),
});
