import { isWorkqError, WorkqError } from '@workq/core';
import { type ClaimedJob, toStoredValue } from '@workq/core/engine';
import { z } from 'zod';
import { hasScope, requireScope, requireSomeConsumeScope } from '../auth.ts';
import {
  checkBatchSize,
  checkPayloads,
  enqueueOptions,
  jobName,
  lease,
  storableText,
  toEnqueueInput,
  version,
} from './inputs.ts';
import { authedProcedure, router, type ServerServices } from './trpc.ts';

const completion = lease.extend({ result: z.unknown() });

/**
 * A leased job as the claim response carries it: the lease expiry as epoch
 * milliseconds, so a batch of plain-JSON payloads travels as plain JSON.
 */
export type WireClaimedJob = Omit<ClaimedJob, 'leaseExpiresAt'> & { leaseExpiresAtMs: number };

/** Built field by field, not by rest and spread: it runs for every claimed job, where a spread copy is far slower. */
function toWireJob(job: ClaimedJob): WireClaimedJob {
  return {
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
}

/**
 * The jobs a claim leased, as its answer carries them. When its client has gone away meanwhile (it closed,
 * or its connection dropped), nobody would run them: they go back to the queue unstarted rather than wait
 * out their leases with an attempt spent. (A client seen to leave only after this is answered in vain.)
 */
async function deliver(
  services: ServerServices,
  name: string,
  jobs: readonly ClaimedJob[],
  requestSignal: AbortSignal,
): Promise<WireClaimedJob[]> {
  if (jobs.length === 0) return [];
  if (requestSignal.aborted) {
    await services.engine.release(jobs).catch((error: unknown) => {
      services.options.logger.warn('could not release the jobs of a claim whose client went away', {
        error: String(error),
      });
    });
    return [];
  }
  services.metrics.claimed.inc({ name }, jobs.length);
  return jobs.map(toWireJob);
}

/** Completes held jobs, merged with other requests' acks into shared store writes. */
async function completeHeld(
  services: ServerServices,
  items: readonly z.infer<typeof completion>[],
): Promise<{ id: string; ok: boolean }[]> {
  if (items.length === 0) return [];
  checkBatchSize(items.length, services.options.limits.maxBatchSize, 'complete');
  // Refused here, by itself, rather than failing the other requests' acks it would be merged with.
  for (const { id, result } of items) toStoredValue(result, `Result of job ${id}`);
  const outcomes = await services.completions.submit(
    items.map(({ id, leaseToken, result }) => ({ id, leaseToken, result })),
  );
  services.metrics.completed.inc(outcomes.filter((o) => o.ok).length);
  // A repeat of an applied ack, whichever server applied it, finds its lease gone: the job is completed all the same.
  return outcomes.map(({ id, ok, repeated }) => ({ id, ok: ok || repeated }));
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
        waitMs: z.number().int().min(0).default(0),
        leaseMs: z.number().int().min(1).optional(),
        complete: z.array(completion).default([]),
      }),
    )
    .mutation(
      async ({ ctx, input, signal }): Promise<{ jobs: WireClaimedJob[]; completed: string[]; acksFailed: boolean }> => {
        requireScope(ctx.principal, 'consume', input.name);
        const { engine, wakeups, presence, options } = ctx.services;
        checkBatchSize(input.limit, options.limits.maxBatchSize, 'claim');
        // The acks and the first claim attempt go to the store side by side: neither waits on the other's commit.
        // If the acks fail (store unavailable) the claim still answers, flagging them for the worker to resend.
        const acked = completeHeld(ctx.services, input.complete).then(
          (outcomes) => ({ completed: outcomes.filter((o) => o.ok).map((o) => o.id), acksFailed: false }),
          () => ({ completed: [] as string[], acksFailed: true }),
        );
        const host = input.host ?? ctx.remoteAddress;
        const { name, minVersion, maxVersion, workerId } = input;
        await presence.seen({ id: workerId, host, name, minVersion, maxVersion });
        const deadline = Date.now() + Math.min(input.waitMs, options.limits.maxLongPollMs);
        const aborted = signal ?? new AbortController().signal;
        const claimInput = { name, minVersion, maxVersion, limit: input.limit, workerId, leaseMs: input.leaseMs };
        const inProgress = ctx.services.claims.begin(workerId, name);
        try {
          // Right after a handoff to this worker, with nothing announced since, the query would find nothing.
          let skipQuery = input.waitMs > 0 && ctx.services.handoffs.nothingReadySinceHandoff(claimInput);
          for (;;) {
            const seen = wakeups.generation(name);
            ctx.services.metrics.claimQueries.inc({ name, query: skipQuery ? 'skipped' : 'ran' });
            const query = skipQuery ? async () => [] : () => engine.claim(claimInput);
            skipQuery = false;
            // Parked, when it finds nothing, before the acks' commit is awaited: an enqueue arriving meanwhile
            // can already hand its job over.
            const { jobs, parked } = await ctx.services.handoffs.attempt(
              claimInput,
              aborted,
              query,
              () => deadline > Date.now() && !aborted.aborted && !inProgress.stop.aborted && !wakeups.isClosed,
            );
            if (!parked) {
              const acks = await acked;
              return { jobs: await deliver(ctx.services, name, jobs, aborted), ...acks };
            }
            const acks = await acked;
            // Acks that found their lease lost are answered now rather than after the wait, so that the worker
            // reports them while they are news. (Acks that failed are sent again after the wait, as before: an
            // answer at once would bring them straight back while the store still fails them.)
            const leasesLost = !acks.acksFailed && acks.completed.length < input.complete.length;
            if (!leasesLost) {
              const waitMs = Math.min(Math.max(0, deadline - Date.now()), options.pollIntervalMs);
              const waitEnds = AbortSignal.any([aborted, parked.taken, inProgress.stop]);
              await wakeups.waitForReady(name, seen, waitMs, waitEnds);
            }
            const handed = await ctx.services.handoffs.withdraw(parked);
            if (handed.length > 0) {
              const delivered = await deliver(ctx.services, name, handed, aborted);
              ctx.services.metrics.handedOver.inc({ name }, delivered.length);
              return { jobs: delivered, ...acks };
            }
            // Its worker is closing and asked for an answer now, or leases were lost.
            if (inProgress.stop.aborted || leasesLost) return { jobs: [], ...acks };
            // A wake-up can run before this process has read that the client went away (an in-process
            // store such as PGlite answers without yielding to I/O). One turn of the event loop lets a
            // closed connection abort the request first, rather than leasing jobs to nobody.
            await new Promise((resolve) => setImmediate(resolve));
            if (aborted.aborted) return { jobs: [], ...acks };
          }
        } finally {
          inProgress.end();
        }
      },
    ),

  /**
   * For a closing worker: its claims waiting on this server answer at once
   * (with any jobs handed to them), and its claims arriving in the next
   * seconds do not wait. Resolves to how many of its claims were in progress
   * here; with none, they are on another server, and the worker drops them.
   * Only claims of job types the caller's token may consume are touched.
   */
  stopWaiting: authedProcedure.input(z.object({ workerId: storableText(1, 64) })).mutation(({ ctx, input }) => {
    requireSomeConsumeScope(ctx.principal);
    return { claims: ctx.services.claims.stopWaiting(input.workerId, ctx.principal) };
  }),

  /** Completes a batch of held jobs; a lost lease fails only its own item. */
  complete: authedProcedure.input(z.object({ items: z.array(completion).min(1) })).mutation(({ ctx, input }) => {
    requireSomeConsumeScope(ctx.principal);
    return completeHeld(ctx.services, input.items);
  }),

  fail: authedProcedure
    .input(lease.extend({ message: z.string().max(10_000), permanent: z.boolean().default(false) }))
    .mutation(async ({ ctx, input }) => {
      requireSomeConsumeScope(ctx.principal);
      const status = await ctx.services.engine.fail(
        { id: input.id, leaseToken: input.leaseToken },
        { message: input.message, permanent: input.permanent },
      );
      ctx.services.metrics.failed.inc({ outcome: status.state === 'dead' ? 'dead' : 'retry' });
      return { state: status.state, runAt: status.runAt, attempts: status.attempts };
    }),

  /**
   * Gives held jobs of one type back unstarted, ready again in their place with their attempt not counted:
   * for a worker that, by the time it could start them, finds their leases expired or about to expire.
   * Fenced: a job whose lease is lost already is left as it is. Resolves to the ids released.
   */
  release: authedProcedure
    .input(z.object({ name: jobName, items: z.array(lease).min(1) }))
    .mutation(({ ctx, input }) => {
      requireScope(ctx.principal, 'consume', input.name);
      checkBatchSize(input.items.length, ctx.services.options.limits.maxBatchSize, 'release');
      const { name } = input;
      return ctx.services.engine.release(input.items.map(({ id, leaseToken }) => ({ id, leaseToken, name })));
    }),

  /** Extends a batch of leases; an item whose lease is lost (expired, cancelled) comes back `ok: false`. */
  extend: authedProcedure
    .input(z.object({ items: z.array(lease.extend({ leaseMs: z.number().int().min(1).optional() })).min(1) }))
    .mutation(async ({ ctx, input }) => {
      requireSomeConsumeScope(ctx.principal);
      checkBatchSize(input.items.length, ctx.services.options.limits.maxBatchSize, 'extend');
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

  progress: authedProcedure
    .input(lease.extend({ progress: z.number().min(0).max(100) }))
    .mutation(async ({ ctx, input }) => {
      requireSomeConsumeScope(ctx.principal);
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
    .mutation(async ({ ctx, input }) => {
      requireScope(ctx.principal, 'consume', input.name);
      const { id, leaseToken, name, payload } = input;
      await checkPayloads(ctx.services, name, input.version, [payload]);
      await ctx.services.engine.updatePayload({ id, leaseToken }, { name, version: input.version, payload });
      return true;
    }),

  /** Atomically ends the held job and enqueues `next` in its place (pipelines). */
  moveTo: authedProcedure
    .input(
      lease.extend({
        next: z.object({ name: jobName, version, payload: z.unknown(), options: enqueueOptions }),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      requireSomeConsumeScope(ctx.principal);
      const { next } = input;
      if (!hasScope(ctx.principal, 'produce', next.name) && !hasScope(ctx.principal, 'consume', next.name)) {
        throw new WorkqError(
          'FORBIDDEN',
          `This token may not move jobs to "${next.name}": it needs produce:${next.name} or consume:${next.name}.`,
        );
      }
      await checkPayloads(ctx.services, next.name, next.version, [next.payload]);
      return ctx.services.engine.moveTo(
        { id: input.id, leaseToken: input.leaseToken },
        toEnqueueInput(next.name, next.version, next.payload, next.options),
      );
    }),
});
