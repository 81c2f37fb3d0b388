/**
 * What a chaos run proves, computed once it is over from three independent
 * sources: the store itself (read directly, not through a queue server), the
 * producers' acknowledged enqueues, and the workers' run logs, against the
 * faults the harness injected.
 */
import type { JobRecord } from '@workq/core/engine';
import { jobTrails } from './job-trail.ts';
import type { ProducerFigures } from './producers.ts';
import type { AckRecord, ClaimRecord, RunLogRecord, RunRecord } from './run-log.ts';

/** A fault the harness injected: from `at` until `until` (when its target was back), epoch ms. */
export interface FaultEvent {
  kind: 'worker-kill' | 'worker-stop' | 'server-kill' | 'database-crash' | 'database-restart';
  at: number;
  until: number;
  /** The worker's pid, the server's name, or the database kind. */
  target: string;
}

/** Ready jobs seen at one moment of the run. */
export interface BacklogSample {
  at: number;
  ready: number;
}

/**
 * How long after an outage a worker may still be waiting to reconnect: the SDK's consumer backs off up to
 * about 5 s between failed calls, so a kill that soon after an outage is timed partly by that wait.
 */
const RECONNECT_MAX_MS = 5_000;

/** One job a killed worker held, and how long after the kill it started again. */
export interface Redelivery {
  ms: number;
  /** The job, and when its worker was killed (epoch ms). */
  id: string;
  killAt: number;
  /** At least the backlog threshold of jobs were ready at the kill. */
  withBacklog: boolean;
  /** A server or the database was down from 5 s before the kill (workers reconnecting) to `leaseMs + 2 s` after it. */
  duringOutage: boolean;
}

export interface Checks {
  enqueuesAcknowledged: number;
  keyedAcknowledged: number;
  unkeyedAcknowledged: number;
  jobsInStore: number;
  /** Acknowledged enqueues whose job is missing or not completed. */
  lost: number;
  /** Jobs in the store, acknowledged or not, that are not completed. */
  unfinished: number;
  /** Keyed sequence numbers with more than one job: idempotency broken. */
  keyedDuplicates: number;
  /** Jobs whose idempotency key is not the one their own enqueue used. */
  misKeyed: number;
  /** Acknowledged enqueues answered with the id of a job made for another sequence number. */
  misanswered: number;
  /** Unkeyed sequence numbers with a second job, each after a retried enqueue whose first outcome was unknown. */
  unkeyedRetryDuplicates: number;
  /** Second jobs of unkeyed sequence numbers that had no failed try: unexplained. */
  unexplainedDuplicates: number;
  /** Jobs with successful acks under two different leases (from the run logs). */
  duplicateCompletions: number;
  /** Acks the store accepted from a lease older than the job's latest (run logs), or a completed job whose result names an earlier attempt than its last (store). */
  staleAcksAccepted: number;
  /** Jobs handed out again after an ack completed them (run logs). */
  deliveredAfterCompletion: number;
  /** Acks the server refused because their lease was lost. */
  staleAcksRefused: number;
  /** Lease-lost reports a worker's `onError` received. */
  leaseLostReported: number;
  /** Lease extensions refused as lost. */
  extensionsRefused: number;
  /** Jobs whose handler ran more than once, by why the earlier run did not count. */
  ranTwice: number;
  ranTwiceBecause: Record<string, number>;
  /** Attempts after the first, over all jobs (the store's `attempts`). */
  extraAttempts: number;
  /** From a worker's SIGKILL to the next start of each job it held. */
  redeliveries: Redelivery[];
  /** Worker kills while at least `backlogThreshold` jobs were ready. */
  killsWithBacklog: number;
  /** Errors the workers' `onError` received, by code (`OTHER`: not a WorkqError). */
  workerErrors: Record<string, number>;
  /** One message of an error other than UNAVAILABLE or LEASE_LOST, if any. */
  workerErrorExample?: string;
  /** The first few problems found, for the report; a problem with one job ends with that job's trail (job-trail.ts). */
  examples: string[];
}

const byJob = <R extends { id: string }>(records: readonly R[]): Map<string, R[]> => {
  const map = new Map<string, R[]>();
  for (const record of records) {
    const list = map.get(record.id);
    if (list) list.push(record);
    else map.set(record.id, [record]);
  }
  return map;
};

export function analyse(input: {
  stored: readonly JobRecord[];
  producers: ProducerFigures;
  records: readonly RunLogRecord[];
  faults: readonly FaultEvent[];
  backlog: readonly BacklogSample[];
  backlogThreshold: number;
  leaseMs: number;
}): Checks {
  const { stored, producers, records, faults } = input;
  const examples: string[] = [];
  const note = (text: string) => {
    if (examples.length < 12) examples.push(text);
  };
  const jobsById = new Map(stored.map((job) => [job.id, job]));
  const origin = records.reduce((first, record) => Math.min(first, record.t), Number.POSITIVE_INFINITY);
  const trailOf = jobTrails({ records, faults, stored: jobsById, leaseMs: input.leaseMs, origin });
  const seqOf = (job: JobRecord) => (job.payload as { seq: number }).seq;

  let lost = 0;
  let misanswered = 0;
  for (const ack of producers.acknowledged) {
    const job = jobsById.get(ack.id);
    if (job && seqOf(job) !== ack.seq) {
      misanswered++;
      note(`enqueue of seq ${ack.seq} was answered with job ${ack.id}, whose payload is seq ${seqOf(job)}`);
    }
    if (job?.state !== 'completed') {
      lost++;
      note(`lost: seq ${ack.seq} (job ${ack.id}) is ${job ? job.state : 'missing from the store'} ${trailOf(ack.id)}`);
    }
  }
  const unfinished = stored.filter((job) => job.state !== 'completed');
  for (const job of unfinished.slice(0, 3))
    note(`unfinished: job ${job.id} (seq ${seqOf(job)}) is ${job.state} ${trailOf(job.id)}`);

  const acknowledgedBySeq = new Map(producers.acknowledged.map((ack) => [ack.seq, ack]));
  const jobsBySeq = new Map<number, JobRecord[]>();
  for (const job of stored) jobsBySeq.set(seqOf(job), [...(jobsBySeq.get(seqOf(job)) ?? []), job]);
  let keyedDuplicates = 0;
  let unkeyedRetryDuplicates = 0;
  let unexplainedDuplicates = 0;
  let misKeyed = 0;
  for (const [seq, jobs] of jobsBySeq) {
    const ownKey = producers.keyOf(seq);
    for (const job of jobs) {
      // A key the producers made, but for another sequence number. (An SDK may make up keys of its own.)
      const key = job.idempotencyKey;
      if (key !== null && key !== ownKey && key.startsWith(producers.keyPrefix)) {
        misKeyed++;
        note(`job ${job.id} (seq ${seq}) carries idempotency key ${key}, not its own`);
      }
    }
    if (jobs.length < 2) continue;
    const ack = acknowledgedBySeq.get(seq);
    if (ownKey !== undefined) {
      keyedDuplicates++;
      const described = jobs.map(
        (job) => `${job.id} key ${job.idempotencyKey} ${job.state} created ${job.createdAt.toISOString()}`,
      );
      const answered = ack
        ? `acknowledged ${ack.id} (created ${ack.created}, after a retry ${ack.uncertain})`
        : 'never acknowledged';
      note(`idempotency: keyed seq ${seq} has ${jobs.length} jobs: ${described.join('; ')}; ${answered}`);
    } else if (ack?.uncertain) {
      unkeyedRetryDuplicates += jobs.length - 1;
    } else {
      unexplainedDuplicates += jobs.length - 1;
      note(`duplicate job: unkeyed seq ${seq} has ${jobs.length} jobs without a retried enqueue`);
    }
  }

  const claims = byJob(records.filter((r): r is ClaimRecord => r.k === 'claim'));
  const starts = byJob(records.filter((r): r is RunRecord => r.k === 'start'));
  const acks = records.filter((r): r is AckRecord => r.k === 'ack');
  const okAcks = byJob(acks.filter((ack) => ack.ok));
  let duplicateCompletions = 0;
  let staleAcksAccepted = 0;
  let deliveredAfterCompletion = 0;
  for (const [id, jobAcks] of okAcks) {
    const tokens = new Set(jobAcks.map((ack) => ack.tok));
    if (tokens.size > 1) {
      duplicateCompletions++;
      note(`duplicate completion: job ${id} completed under ${tokens.size} leases ${trailOf(id)}`);
    }
    const jobClaims = claims.get(id) ?? [];
    for (const token of tokens) {
      const claim = jobClaims.find((c) => c.tok === token);
      const ackedAt = Math.min(...jobAcks.filter((ack) => ack.tok === token).map((ack) => ack.t));
      for (const later of jobClaims.filter((c) => claim && c.a > claim.a)) {
        if (later.t <= ackedAt) {
          staleAcksAccepted++;
          note(
            `stale ack accepted: job ${id} attempt ${claim?.a} acked after attempt ${later.a} was handed out ${trailOf(id)}`,
          );
        } else {
          deliveredAfterCompletion++;
          note(
            `done is not done: job ${id} handed out again (attempt ${later.a}) after its ack was applied ${trailOf(id)}`,
          );
        }
      }
    }
    const job = jobsById.get(id);
    if (job?.state === 'completed' && job.leaseToken !== null && !tokens.has(job.leaseToken)) {
      duplicateCompletions++;
      note(`job ${id}: acked ok under a lease other than the one the store says completed it ${trailOf(id)}`);
    }
  }
  for (const job of stored) {
    const result = job.result as { attempt?: number } | null;
    if (job.state === 'completed' && result?.attempt !== undefined && result.attempt !== job.attempts) {
      staleAcksAccepted++;
      note(
        `stale ack accepted: job ${job.id} completed by attempt ${result.attempt} of ${job.attempts} ${trailOf(job.id)}`,
      );
    }
  }

  const kills = faults.filter((f) => f.kind === 'worker-kill');
  const stops = faults.filter((f) => f.kind === 'worker-stop');
  const outages = faults.filter((f) => f.kind !== 'worker-kill' && f.kind !== 'worker-stop');
  const ends = byJob(records.filter((r): r is RunRecord => r.k === 'end'));
  const refused = new Set(acks.filter((ack) => !ack.ok).map((ack) => `${ack.id}:${ack.tok}`));
  const ranTwiceBecause: Record<string, number> = {};
  let ranTwice = 0;
  for (const [id, jobStarts] of starts) {
    const attempts = [...new Set(jobStarts.map((s) => s.a))].sort((a, b) => a - b);
    if (attempts.length < 2) continue;
    ranTwice++;
    const completedBy = jobsById.get(id)?.attempts;
    // Every run but the one that completed the job: each is a run that did not count, and why.
    for (const attempt of attempts.filter((a) => a !== completedBy)) {
      const run = jobStarts.find((s) => s.a === attempt) as RunRecord;
      const end = ends.get(id)?.find((e) => e.a === attempt);
      const token = claims.get(id)?.find((c) => c.a === attempt)?.tok;
      const ackRefused = token !== undefined && refused.has(`${id}:${token}`);
      const reason = whyRunAgain(run, end, ackRefused, { kills, stops, outages }, input.leaseMs);
      ranTwiceBecause[reason] = (ranTwiceBecause[reason] ?? 0) + 1;
    }
  }
  const extraAttempts = stored.reduce((sum, job) => sum + Math.max(0, job.attempts - 1), 0);

  const { redeliveries: redelivered, killsWithBacklog } = redeliveries(
    faults,
    claims,
    starts,
    acks,
    input.backlog,
    input.backlogThreshold,
    input.leaseMs + 2_000,
  );
  const workerErrors: Record<string, number> = {};
  let workerErrorExample: string | undefined;
  for (const error of records.filter((r) => r.k === 'error')) {
    workerErrors[error.code] = (workerErrors[error.code] ?? 0) + 1;
    if (error.code !== 'UNAVAILABLE' && error.code !== 'LEASE_LOST') workerErrorExample ??= error.message;
  }

  const errors = records.filter((r) => r.k === 'error');
  return {
    enqueuesAcknowledged: producers.acknowledged.length,
    keyedAcknowledged: producers.acknowledged.filter((a) => a.keyed).length,
    unkeyedAcknowledged: producers.acknowledged.filter((a) => !a.keyed).length,
    jobsInStore: stored.length,
    lost,
    unfinished: unfinished.length,
    keyedDuplicates,
    misKeyed,
    misanswered,
    unkeyedRetryDuplicates,
    unexplainedDuplicates,
    duplicateCompletions,
    staleAcksAccepted,
    deliveredAfterCompletion,
    staleAcksRefused: acks.filter((ack) => !ack.ok).length,
    leaseLostReported: errors.filter((e) => e.code === 'LEASE_LOST').length,
    extensionsRefused: records.filter((r) => r.k === 'extend-lost').length,
    ranTwice,
    ranTwiceBecause,
    extraAttempts,
    redeliveries: redelivered,
    killsWithBacklog,
    workerErrors,
    ...(workerErrorExample === undefined ? {} : { workerErrorExample }),
    examples,
  };
}

/** Why an attempt that started did not complete the job, from what its worker logged and the faults around it. */
function whyRunAgain(
  run: RunRecord,
  end: RunRecord | undefined,
  ackRefused: boolean,
  faults: { kills: readonly FaultEvent[]; stops: readonly FaultEvent[]; outages: readonly FaultEvent[] },
  leaseMs: number,
): string {
  const pid = String(run.pid);
  const killedAt = faults.kills.find((k) => k.target === pid && k.at >= run.t)?.at;
  if (!ackRefused && killedAt !== undefined && (end === undefined || end.t >= killedAt)) {
    return 'worker SIGKILLed mid-job';
  }
  // Running when it was stopped, or handed to it while it was stopped and started on SIGCONT.
  if (faults.stops.some((s) => s.target === pid && run.t <= s.until + leaseMs && (end?.t ?? run.t) >= s.at)) {
    return 'lease expired while its worker was SIGSTOPped';
  }
  if (!ackRefused && killedAt !== undefined && end !== undefined && killedAt <= end.t + leaseMs) {
    return 'worker SIGKILLed before its ack was applied';
  }
  const overlapping = faults.outages.find((o) => o.at <= (end?.t ?? run.t) + leaseMs && o.until + leaseMs >= run.t);
  if (overlapping) return `lease ran out during a ${overlapping.kind.replace('-', ' ')}`;
  return 'lease expired with no fault nearby (a slow machine)';
}

function redeliveries(
  faults: readonly FaultEvent[],
  claims: ReadonlyMap<string, ClaimRecord[]>,
  starts: ReadonlyMap<string, RunRecord[]>,
  acks: readonly AckRecord[],
  backlog: readonly BacklogSample[],
  threshold: number,
  outageWindowMs: number,
): { redeliveries: Redelivery[]; killsWithBacklog: number } {
  const okAckAt = new Map(acks.filter((a) => a.ok).map((a) => [`${a.id}:${a.tok}`, a.t]));
  const claimsByPid = new Map<string, ClaimRecord[]>();
  for (const list of claims.values()) {
    for (const claim of list) {
      const pid = String(claim.pid);
      claimsByPid.set(pid, [...(claimsByPid.get(pid) ?? []), claim]);
    }
  }
  const outages = faults.filter((f) => f.kind !== 'worker-kill' && f.kind !== 'worker-stop');
  const found: Redelivery[] = [];
  let killsWithBacklog = 0;
  for (const kill of faults.filter((f) => f.kind === 'worker-kill')) {
    const readyAtKill = backlog.filter((s) => Math.abs(s.at - kill.at) <= 2_500).map((s) => s.ready);
    const withBacklog = readyAtKill.length > 0 && Math.max(...readyAtKill) >= threshold;
    if (withBacklog) killsWithBacklog++;
    const outage = outages.some((o) => o.at <= kill.at + outageWindowMs && o.until >= kill.at - RECONNECT_MAX_MS);
    for (const claim of claimsByPid.get(kill.target) ?? []) {
      if (claim.t > kill.at) continue;
      // A lease already lost and handed out again before the kill was no longer this worker's.
      if ((claims.get(claim.id) ?? []).some((c) => c.a > claim.a && c.t <= kill.at)) continue;
      const ackedAt = okAckAt.get(`${claim.id}:${claim.tok}`);
      if (ackedAt !== undefined && ackedAt <= kill.at) continue;
      const next = (starts.get(claim.id) ?? [])
        .filter((s) => s.a > claim.a && s.t >= kill.at)
        .sort((a, b) => a.t - b.t)[0];
      // None: its ack reached the store before the kill, but the answer did not reach the log.
      if (!next) continue;
      found.push({ ms: next.t - kill.at, id: claim.id, killAt: kill.at, withBacklog, duringOutage: outage });
    }
  }
  return { redeliveries: found, killsWithBacklog };
}

/** The `p`-th percentile (0-100) by nearest rank; `undefined` for no values. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
