import type { IncomingMessage, ServerResponse } from 'node:http';
import { WorkqError } from '@workq/core';
import type { ClaimedJob } from '@workq/core/engine';
import { z } from 'zod';
import { claimJobs, completeJobs, extendLeases, failJob, heldJobType } from '../app/consume.ts';
import { jobType, readStatus } from '../app/jobs.ts';
import type { ServerServices } from '../app/services.ts';
import { type Principal, requireReadScope, requireScope, requireSomeConsumeScope, stopScopeOf } from '../auth.ts';
import { jobId, jobName, leaseLengthMs, leaseToken, storableText, version } from '../router/inputs.ts';
import { abortOnClose, readJsonBody } from './json-api.ts';

/**
 * The plain HTTP API for workers in any language, as thin as the tRPC
 * procedures they mirror (router/consumer.ts, router/producer.ts): the same
 * use cases, the same scopes, the same limits. A claim needs `consume:<name>`;
 * complete, fail and extend need some `consume:` scope and the job's lease
 * token, which is what authorizes them (snooze, as `consumer.snooze`, needs
 * `consume:` of the job's type, and rate-limited some `consume:` scope, as
 * `consumer.rateLimited`); status needs `produce:` or `consume:`
 * of the job's type, and cancel `produce:` of it.
 */

/** One authenticated call: its request and response, the caller, and the route's path parameter, decoded. */
export interface RestCall {
  req: IncomingMessage;
  res: ServerResponse;
  services: ServerServices;
  principal: Principal;
  param: string;
}

/** What a route answers with: a status and a JSON body. */
export interface RestAnswer {
  status: number;
  body: unknown;
}

/** The largest body of a claim, fail, extend, snooze or rate-limited: their fields are short (a stack is at most 64 000 characters). */
const SMALL_BODY_BYTES = 512 * 1024;

export const claimBody = z.object({
  workerId: storableText(1, 64),
  minVersion: version.default(1),
  maxVersion: version,
  limit: z.number().int().min(1).default(1),
  waitMs: z.number().int().min(0).default(0),
  leaseMs: leaseLengthMs.optional(),
  host: storableText(0, 255).optional(),
  pid: z
    .int()
    .min(0)
    .max(2 ** 31 - 1)
    .optional(),
});

export const completeBody = z.object({ leaseToken, result: z.unknown() });

export const failBody = z.object({
  leaseToken,
  message: z.string().max(10_000),
  permanent: z.boolean().default(false),
  timedOut: z.boolean().default(false),
  errorName: z.string().max(1_000).optional(),
  stack: z.string().max(64_000).optional(),
});

/** `ctx.delay` or `ctx.retryAt` over HTTP: exactly one of a wait from now and a run time. */
export const snoozeBody = z
  .object({
    leaseToken,
    delayMs: z.number().optional().describe('Run again this many milliseconds from now (above 0, at most a year).'),
    runAt: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('Run again at this instant (one already past runs at once).'),
  })
  .refine((body) => (body.delayMs === undefined) !== (body.runAt === undefined), {
    message: 'A delay takes either delayMs or runAt, not both and not neither.',
  });

/** `ctx.rateLimited` over HTTP: how long the job's type is held. */
export const rateLimitedBody = z.object({
  leaseToken,
  holdMs: z.number().describe("Hold the job's type this many milliseconds from now (above 0, at most a day)."),
});

export const extendBody = z.object({
  leaseToken,
  leaseMs: leaseLengthMs.optional(),
  workerId: storableText(1, 64).optional(),
});

/**
 * `POST /v1/jobs/{name}/claim`: leases up to `limit` jobs of versions
 * `minVersion`..`maxVersion`, waiting up to `waitMs` (at most the server's
 * `maxLongPollMs`) when none is ready. Payloads come as they were enqueued,
 * in their own version: a worker that reads one version claims only it.
 */
export async function claimRoute({ req, res, services, principal, param }: RestCall): Promise<RestAnswer> {
  const name = parseParam(jobName, param, 'job name');
  requireScope(principal, 'consume', name);
  const body = await readJsonBody(req, SMALL_BODY_BYTES, claimBody, CLAIM_SHAPE);
  const answer = await claimJobs(
    services,
    {
      name,
      minVersion: body.minVersion,
      maxVersion: body.maxVersion,
      limit: body.limit,
      workerId: body.workerId,
      host: body.host ?? req.socket.remoteAddress ?? 'unknown',
      pid: body.pid ?? null,
      startedAt: null,
      waitMs: body.waitMs,
      leaseMs: body.leaseMs,
      acks: [],
    },
    abortOnClose(res),
  );
  return { status: 200, body: { jobs: answer.jobs.map(toHttpClaimedJob) } };
}

/** `POST /v1/job/{id}/complete`: completes the held job with `result`; `LEASE_LOST` when the lease is not held. */
export async function completeRoute({ req, services, principal, param }: RestCall): Promise<RestAnswer> {
  const id = parseParam(jobId, param, 'job id');
  requireSomeConsumeScope(principal);
  const bodyLimit = Math.min(
    services.options.limits.maxRequestBytes,
    2 * services.options.limits.maxResultBytes + 65_536,
  );
  const body = await readJsonBody(req, bodyLimit, completeBody, '{"leaseToken": <string>, "result"?: <json>}');
  const [outcome] = await completeJobs(services, [{ id, leaseToken: body.leaseToken, result: body.result }], undefined);
  if (!outcome?.ok) throw leaseLost(id);
  return { status: 200, body: { completed: true } };
}

/** `POST /v1/job/{id}/fail`: records a failed attempt; the job is retried after its backoff, or ends dead. */
export async function failRoute({ req, services, principal, param }: RestCall): Promise<RestAnswer> {
  const id = parseParam(jobId, param, 'job id');
  requireSomeConsumeScope(principal);
  const expected =
    '{"leaseToken": <string>, "message": <string>, "permanent"?: <bool>, "timedOut"?: <bool>, "errorName"?, "stack"?}';
  const { leaseToken: token, ...failure } = await readJsonBody(req, SMALL_BODY_BYTES, failBody, expected);
  const outcome = await failJob(services, { id, leaseToken: token }, failure);
  return { status: 200, body: { ...outcome, runAt: outcome.runAt.toISOString() } };
}

/** `POST /v1/job/{id}/extend`: the lease runs `leaseMs` (default: the job's) from now; `LEASE_LOST` when lost. */
export async function extendRoute({ req, services, principal, param }: RestCall): Promise<RestAnswer> {
  const id = parseParam(jobId, param, 'job id');
  requireSomeConsumeScope(principal);
  const expected = '{"leaseToken": <string>, "leaseMs"?: <int>, "workerId"?: <string>}';
  const body = await readJsonBody(req, SMALL_BODY_BYTES, extendBody, expected);
  const [outcome] = await extendLeases(
    services,
    [{ id, leaseToken: body.leaseToken, leaseMs: body.leaseMs }],
    body.workerId,
  );
  if (!outcome?.ok) throw leaseLost(id);
  return { status: 200, body: { leaseExpiresAt: outcome.leaseExpiresAt.toISOString() } };
}

/**
 * `POST /v1/job/{id}/snooze`: ends the held job's attempt, uncounted, and it waits again until now + `delayMs`
 * or `runAt` (`ctx.delay`, `ctx.retryAt`). Needs `consume:` of the job's type, as `consumer.snooze`;
 * `LEASE_LOST` when the lease is not held.
 */
export async function snoozeRoute({ req, services, principal, param }: RestCall): Promise<RestAnswer> {
  const id = parseParam(jobId, param, 'job id');
  requireSomeConsumeScope(principal);
  const expected = '{"leaseToken": <string>, "delayMs": <number>} or {"leaseToken": <string>, "runAt": <date-time>}';
  const body = await readJsonBody(req, SMALL_BODY_BYTES, snoozeBody, expected);
  // The job's own type, read rather than taken from the caller, is what the token must consume.
  const name = await heldJobType(services, { id, leaseToken: body.leaseToken });
  if (name === undefined) throw leaseLost(id);
  requireScope(principal, 'consume', name);
  const until = body.runAt === undefined ? { delayMs: body.delayMs as number } : { runAt: new Date(body.runAt) };
  const { runAt } = await services.engine.snooze({ id, leaseToken: body.leaseToken, name }, until);
  return { status: 200, body: { runAt: runAt.toISOString() } };
}

/**
 * `POST /v1/job/{id}/rate-limited`: holds the held job's type for `holdMs` on every server (`ctx.rateLimited`:
 * an upstream said 429) and gives the job back, ready, its attempt not counted; `LEASE_LOST` when the lease is
 * not held.
 */
export async function rateLimitedRoute({ req, services, principal, param }: RestCall): Promise<RestAnswer> {
  const id = parseParam(jobId, param, 'job id');
  requireSomeConsumeScope(principal);
  const expected = '{"leaseToken": <string>, "holdMs": <number>}';
  const body = await readJsonBody(req, SMALL_BODY_BYTES, rateLimitedBody, expected);
  const { heldUntil } = await services.engine.rateLimited({ id, leaseToken: body.leaseToken }, body.holdMs);
  return { status: 200, body: { heldUntil: heldUntil.toISOString() } };
}

/**
 * `POST /v1/workers/{workerId}/stop-waiting`: for a closing worker, as `consumer.stopWaiting`: its claims waiting
 * on this server answer at once (with any job handed to them meanwhile, which it should run before it exits),
 * and its claims arriving in the next seconds do not wait. Only claims of types the token may consume are
 * touched; `claims` says how many of the worker's claims were in progress here.
 */
export async function stopWaitingRoute({ services, principal, param }: RestCall): Promise<RestAnswer> {
  requireSomeConsumeScope(principal);
  const workerId = parseParam(storableText(1, 64), param, 'worker id');
  return { status: 200, body: { claims: services.dispatcher.stopWaiting(workerId, stopScopeOf(principal)) } };
}

/** `GET /v1/job/{id}`: the job's status, read with room in the answer budget (as `jobs.get`). */
export async function statusRoute({ res, services, principal, param }: RestCall): Promise<RestAnswer> {
  const job = await readStatus(services, parseParam(jobId, param, 'job id'), abortOnClose(res));
  requireReadScope(principal, job.name);
  return { status: 200, body: job };
}

/** `POST /v1/job/{id}/cancel`: cancels a job that has not finished; `cancelled` says whether this call did. */
export async function cancelRoute(call: RestCall): Promise<RestAnswer> {
  const { id, name } = await readableJob(call);
  requireScope(call.principal, 'produce', name);
  return { status: 200, body: { cancelled: await call.services.engine.cancel(id) } };
}

const CLAIM_SHAPE =
  '{"workerId": <string>, "maxVersion": <int>, "minVersion"?: <int>, "limit"?: <int>, "waitMs"?: <int>, "leaseMs"?: <int>}';

/**
 * The id and type of the job a call names, for a token that may produce or consume its type (as `jobs.get`),
 * else `FORBIDDEN`; its values are not read (`jobType`).
 */
async function readableJob({ services, principal, param }: RestCall): Promise<{ id: string; name: string }> {
  const id = parseParam(jobId, param, 'job id');
  const name = await jobType(services, id);
  requireReadScope(principal, name);
  return { id, name };
}

function parseParam<T extends z.ZodType<string>>(schema: T, value: string, what: string): string {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new WorkqError('VALIDATION', `The ${what} in the path ${parsed.error.issues[0]?.message ?? 'is invalid'}.`);
}

function leaseLost(id: string): WorkqError {
  return new WorkqError(
    'LEASE_LOST',
    `This worker no longer holds job ${id}: its lease expired or the job was cancelled or finished. Stop working on it; it is not yours to complete.`,
  );
}

/** A job as a claim answers it over plain HTTP: what a handler needs, and the lease it runs under. */
function toHttpClaimedJob(job: ClaimedJob) {
  const { id, name, payload, attempt, maxAttempts, leaseToken: token, leaseMs, leaseExpiresAtMs } = job;
  return {
    id,
    name,
    version: job.version,
    payload,
    attempt,
    maxAttempts,
    leaseToken: token,
    leaseMs,
    ...(job.timeoutMs === undefined ? {} : { timeoutMs: job.timeoutMs }),
    leaseExpiresAt: new Date(leaseExpiresAtMs).toISOString(),
  };
}
