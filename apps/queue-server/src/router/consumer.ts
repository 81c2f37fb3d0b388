import { FLOW_LIMITS } from '@workq/core';
import { z } from 'zod';
import { heldChildrenPage, withFirstChildren } from '../app/children-pages.ts';
import { claimJobs, completeJobs, extendLeases, failJob, releaseJobs } from '../app/consume.ts';
import { moveJob } from '../app/enqueue.ts';
import { childTypes, waitForChildren } from '../app/flows.ts';
import { checkPayloads } from '../app/payloads.ts';
import { hasAnyScope, stopScopeOf } from '../auth.ts';
import { completion, withPlainCompletions } from './completions.ts';
import { childJob, enqueueOptions, jobId, jobName, lease, leaseLengthMs, storableText, version } from './inputs.ts';
import { leaseProcedure, producesEach, scoped } from './scoped.ts';
import { authedProcedure, callSignal, router } from './trpc.ts';

export const consumerRouter = router({
  /**
   * First completes the held jobs in `complete` (acks riding along, saving a
   * round trip), then leases up to `limit` jobs of one type within the
   * consumer's versions. When none is ready, waits up to `waitMs` for a
   * wake-up instead of returning at once. A resumed job (a parent after its
   * children) comes with the first page of its children (`children`).
   */
  claim: authedProcedure
    .input(
      withPlainCompletions(
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
        'complete',
        0,
      ),
    )
    .use(scoped('consume', (input) => input.name))
    .mutation(async ({ ctx, input, signal }) => {
      const aborted = callSignal(signal);
      const answer = await claimJobs(
        ctx.services,
        {
          name: input.name,
          minVersion: input.minVersion,
          maxVersion: input.maxVersion,
          limit: input.limit,
          workerId: input.workerId,
          host: input.host ?? ctx.remoteAddress,
          pid: input.pid ?? null,
          startedAt: input.startedAt ?? null,
          waitMs: input.waitMs,
          leaseMs: input.leaseMs,
          acks: input.complete,
        },
        aborted,
        // Once the acks are stored, the claim waits on holding none of their results.
        ctx.letGoOfBody,
      );
      // A resumed job comes with its first page of children, which its handler reads before it starts.
      return { ...answer, jobs: await withFirstChildren(ctx.services, answer.jobs, aborted) };
    }),

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
    .input(withPlainCompletions(z.object({ items: z.array(completion).min(1), name: jobName.optional() }), 'items', 1))
    .mutation(({ ctx, input }) => completeJobs(ctx.services, input.items, input.name)),

  /**
   * Records a failed attempt: its message, and the handler's error class and stack when the worker sends them
   * (kept cut to `ERROR_HISTORY_LIMITS`); `timedOut`: the attempt ran past its time limit, and its error has
   * the code `TIMEOUT`. The job is retried after its backoff, or ends dead when `permanent` or out of attempts.
   */
  fail: leaseProcedure
    .input(
      lease.extend({
        message: z.string().max(10_000),
        permanent: z.boolean().default(false),
        timedOut: z.boolean().default(false),
        errorName: z.string().max(1_000).optional(),
        stack: z.string().max(64_000).optional(),
      }),
    )
    .mutation(({ ctx, input }) => {
      const { id, leaseToken, ...failure } = input;
      return failJob(ctx.services, { id, leaseToken }, failure);
    }),

  /**
   * Gives held jobs of one type back unstarted, ready again in their place with their attempt not counted:
   * for a worker that, by the time it could start them, finds their leases expired or about to expire.
   * Fenced: a job whose lease is lost already is left as it is. Resolves to the ids released.
   */
  release: authedProcedure
    .input(z.object({ name: jobName, items: z.array(lease).min(1) }))
    .use(scoped('consume', (input) => input.name))
    .mutation(({ ctx, input }) => releaseJobs(ctx.services, input.name, input.items)),

  /**
   * Extends a batch of leases; an item whose lease is lost (expired, cancelled) comes back `ok: false`.
   * `workerId` names the worker extending them, which the worker registry then counts as seen. With `waitMs`,
   * a batch whose leases all held is answered when one of its jobs, or any job that worker last held, is
   * cancelled (that job `ok: false, cancelled: true`, added when the batch did not name it), or after
   * `waitMs`. With a `workerId`, the batch may be empty: a worker holding nothing waits for its next job's
   * cancellation so.
   */
  extend: leaseProcedure
    .input(
      z
        .object({
          items: z.array(lease.extend({ leaseMs: leaseLengthMs.optional() })),
          workerId: storableText(1, 64).optional(),
          waitMs: z.number().int().min(0).default(0),
        })
        .refine((input) => input.items.length > 0 || input.workerId !== undefined, {
          message: 'items must name at least one lease, unless workerId names the worker whose jobs are watched.',
          path: ['items'],
        }),
    )
    .mutation(({ ctx, input, signal }) =>
      extendLeases(ctx.services, input.items, input.workerId, {
        waitMs: input.waitMs,
        signal: callSignal(signal),
        mayConsume: (name) => hasAnyScope(ctx.principal, ['consume'], name),
      }),
    ),

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

  /**
   * Ends the held job's attempt, uncounted, and parks it `waiting-children` on `children`, enqueued in the
   * same atomic step (`ctx.waitForChildren`); it runs again once they have all ended. Each child's type needs
   * the caller's `produce:` scope.
   */
  waitForChildren: leaseProcedure
    .input(lease.extend({ children: z.array(childJob).min(1) }))
    .use(producesEach((input) => childTypes(input.children)))
    .mutation(async ({ ctx, input }) => {
      await waitForChildren(ctx.services, { id: input.id, leaseToken: input.leaseToken }, input.children);
      return true;
    }),

  /**
   * Ends the held job's attempt, uncounted: it waits again until now + `delayMs` or `runAt` (exactly one of
   * them), keeping its id, payload and flow links (`ctx.delay`, `ctx.retryAt`). Fenced by the lease.
   */
  snooze: authedProcedure
    .input(
      lease
        .extend({ name: jobName, delayMs: z.number().optional(), runAt: z.date().optional() })
        .refine((input) => (input.delayMs === undefined) !== (input.runAt === undefined), {
          message: 'A delay takes either delayMs or runAt, not both and not neither.',
        }),
    )
    .use(scoped('consume', (input) => input.name))
    .mutation(async ({ ctx, input }) => {
      const { id, leaseToken, name, delayMs, runAt } = input;
      const until = runAt === undefined ? { delayMs: delayMs as number } : { runAt };
      return ctx.services.engine.snooze({ id, leaseToken, name }, until);
    }),

  /**
   * Holds the held job's type for `holdMs` across every worker and server (`ctx.rateLimited`: an upstream said
   * 429) and gives the job back, ready, its attempt not counted. Fenced by the lease; resolves to when the
   * hold ends.
   */
  rateLimited: leaseProcedure
    .input(lease.extend({ holdMs: z.number() }))
    .mutation(({ ctx, input }) =>
      ctx.services.engine.rateLimited({ id: input.id, leaseToken: input.leaseToken }, input.holdMs),
    ),

  /**
   * A page of the held job's children, in enqueue order, after `afterId` when given, each with its state and
   * its result or last error, and whether more follow: what a resumed parent's worker hands its handler
   * (`ctx.children`). A page ends where its results and errors reach `limits.maxChildrenPageBytes`. Fenced by the
   * lease, which also stands for the scope to read them.
   */
  children: leaseProcedure
    .input(
      lease.extend({
        afterId: jobId.optional(),
        limit: z.number().int().min(1).max(FLOW_LIMITS.statusChildren).default(FLOW_LIMITS.statusChildren),
      }),
    )
    .query(({ ctx, input, signal }) => {
      const { id, leaseToken, afterId, limit } = input;
      // Each child is already as `jobs.children` sends one (`childEntry`): only what the handler reads.
      const place = { limit, ...(afterId ? { afterId } : {}) };
      return heldChildrenPage(ctx.services, { id, leaseToken }, place, callSignal(signal));
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
