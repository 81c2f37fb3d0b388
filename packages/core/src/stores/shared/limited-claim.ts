import {
  type ClaimedRecord,
  type ClaimRequest,
  type LimitedClaim,
  NO_GROUP,
  type QueueSettings,
} from '../../engine/store.ts';

/** A type's settings as a limited claim reads them, with the state the store keeps for its limits. */
export interface FlowState extends QueueSettings {
  /** Start times (epoch ms) of the type's latest starts, at most `rateLimit.max` of them. */
  recentStarts: readonly number[];
  /** The number of the type's last start, counted from 1; groups take turns by it. */
  lastTurn: number;
}

/** A group with ready jobs, the number of its last start (`null`: never started), and its `active` jobs. */
export interface ReadyGroup {
  group: string;
  lastTurn: number | null;
  /** The group's `active` jobs when the claim asked for them, else 0. */
  active: number;
}

/**
 * The steps of one limited claim, run by a store inside one unit of work
 * that holds the type's settings (a transaction with the settings row
 * locked, or a lock document), so no other limited claim of the type runs
 * between them.
 */
export interface LimitedClaimSteps {
  /** The number of `active` jobs of the claim's type. */
  countActive(): Promise<number>;
  /**
   * The groups with jobs the claim could take (`NO_GROUP` for those without), with their last turns and, when
   * `countActive`, their `active` jobs: one read where the store can, since the type is held meanwhile.
   */
  readyGroups(countActive: boolean): Promise<ReadyGroup[]>;
  /**
   * Up to `cap` ids of jobs the claim could take in each group, in claim order, locked for this unit
   * where the store locks rows (a job another claim holds is skipped).
   */
  candidates(groups: readonly { group: string; cap: number }[]): Promise<Map<string, string[]>>;
  /**
   * Under strict group order: each group (never `NO_GROUP`) holding a job that has started and not ended other
   * than by being active (waiting or delayed with an attempt spent), with that job's id when the claim could take
   * it now (ready, due, of a version it reads), else `null`. The store answers from jobs in those states only.
   */
  heldGroups(): Promise<Map<string, string | null>>;
  /** Leases the jobs with these ids (the store re-checks each is still ready); resolves to them in this order. */
  lease(ids: readonly string[]): Promise<ClaimedRecord[]>;
  /** Leases up to `limit` jobs in claim order, as `claimJobs` does. */
  claimInOrder(limit: number): Promise<ClaimedRecord[]>;
  /** The type's rate-limit state as the store keeps it. */
  rate: RateLedger;
  /** Stores the rate-limit state (`rate`, as the claim left it), the turn counter and the group turns. */
  save(change: { lastTurn: number; groupTurns: Map<string, number> }): Promise<void>;
}

/**
 * A type's rate-limit state, as a store keeps it: whatever it is, it answers
 * as the log of starts `rateWindow` and `afterStarts` reckon with would, or
 * more strictly, never letting more than `rateLimit.max` start in a window.
 */
export interface RateLedger {
  /** How many more may start at `nowMs` (unbounded without a rate limit), and, when none may, when the next may. */
  window(nowMs: number): { allowed: number; nextStartAt: Date | null };
  /** Counts `leased` starts (at least one) at `nowMs`; resolves to when the next may start, `null` unless the rate limit holds it. */
  started(leased: number, nowMs: number): Date | null;
}

/** Whether claims of a type with these settings choose between groups. */
export function takesTurns(settings: QueueSettings): boolean {
  return settings.grouped || settings.groupConcurrency !== null;
}

/**
 * The starts still inside the rate-limit window at `nowMs` (oldest first), how many more may start now, and,
 * when none may, when the next may.
 */
export function rateWindow(
  settings: FlowState,
  nowMs: number,
): { recent: number[]; allowed: number; nextStartAt: Date | null } {
  const rate = settings.rateLimit;
  if (rate === null) return { recent: [], allowed: Number.POSITIVE_INFINITY, nextStartAt: null };
  const recent = settings.recentStarts.filter((at) => at > nowMs - rate.perMs).sort((a, b) => a - b);
  const allowed = Math.max(0, rate.max - recent.length);
  return { recent, allowed, nextStartAt: allowed > 0 ? null : nextStart(recent, rate) };
}

/** When a window with these starts (oldest first, at least `max`) lets the next one in. */
function nextStart(recent: readonly number[], rate: { max: number; perMs: number }): Date {
  return new Date((recent[recent.length - rate.max] as number) + rate.perMs);
}

/**
 * A limited claim, given the type's settings (already held) and the store's steps: the algorithm MongoDB runs,
 * where groups take turns by last start. PostgreSQL runs its form inside the database, as the function
 * `claim_under_limits` (stores/postgres/sql/claim-under-limits.ts), so that a
 * claim is one round trip; MySQL runs its own (stores/mysql/sql/claim-limited-jobs.ts and group-claim.ts), so that a
 * claim reads a group's active jobs and first job in the statement that walks to it. Both take turns from a
 * cursor over the groups' names rather than by last start (all round-robin), and reckon the rate window and its
 * log by `rateWindow` and `afterStarts` (PostgreSQL in SQL); MongoDB keeps its rate-limit state in bounded
 * buckets (`steps.rate`, stores/mongodb/rate-buckets.ts) that answer as that log does. A change of what a limit
 * means is made in all three, and the conformance suite holds them to the same guarantees.
 */
export async function claimUnderSettings(
  request: ClaimRequest,
  settings: FlowState,
  steps: LimitedClaimSteps,
): Promise<LimitedClaim> {
  if (settings.paused) return { jobs: [], paused: true, nextStartAt: null };
  const nowMs = request.now.getTime();
  if (settings.heldUntil !== null && settings.heldUntil.getTime() > nowMs) {
    return { jobs: [], paused: false, nextStartAt: settings.heldUntil };
  }
  const rate = steps.rate.window(nowMs);
  let room = Math.min(request.limit, rate.allowed);
  if (settings.concurrency !== null && room > 0)
    room = Math.min(room, settings.concurrency - (await steps.countActive()));
  if (room <= 0) return { jobs: [], paused: false, nextStartAt: rate.nextStartAt };
  const turns = takesTurns(settings);
  const groupOf = new Map<string, string>();
  const jobs = turns ? await claimByTurns(settings, room, steps, groupOf) : await steps.claimInOrder(room);
  if (jobs.length === 0) return { jobs, paused: false, nextStartAt: null };
  const nextStartAt = steps.rate.started(jobs.length, nowMs);
  const groupTurns = new Map<string, number>();
  if (turns) {
    for (const [i, job] of jobs.entries()) groupTurns.set(groupOf.get(job.id) ?? NO_GROUP, settings.lastTurn + i + 1);
  }
  // Only a rate limit's state and the groups' turns change: a claim under a concurrency limit alone writes nothing.
  if (settings.rateLimit !== null || turns) {
    await steps.save({ lastTurn: settings.lastTurn + jobs.length, groupTurns });
  }
  return { jobs, paused: false, nextStartAt };
}

/**
 * After a claim at `nowMs` leased `leased` jobs (at least one), given the type's settings and its rate window
 * before the claim: the rate-limit log to keep (empty without a rate limit), and when the next start may be
 * (`null` unless the rate limit is what holds the next claim back).
 */
export function afterStarts(
  settings: FlowState,
  rate: { recent: readonly number[] },
  leased: number,
  nowMs: number,
): { recentStarts: number[]; nextStartAt: Date | null } {
  const rateLimit = settings.rateLimit;
  if (rateLimit === null) return { recentStarts: [], nextStartAt: null };
  const starts = Array.from({ length: leased }, () => nowMs);
  // The latest `max` starts are kept, whatever this claim's `now`: a claim made earlier by another clock (or
  // that waited for this one) still needs the starts inside its own window. The log is kept sorted.
  const recentStarts = [...settings.recentStarts, ...starts].sort((a, b) => a - b).slice(-rateLimit.max);
  const inWindow = [...rate.recent, ...starts].sort((a, b) => a - b);
  return { recentStarts, nextStartAt: inWindow.length >= rateLimit.max ? nextStart(inWindow, rateLimit) : null };
}

/**
 * Up to `room` jobs taken in turns: groups in the order of their last start (never-started first), one job per
 * group per round, each group capped by `groupConcurrency` less its active jobs. Records each leased job's
 * group in `groupOf`.
 */
async function claimByTurns(
  settings: FlowState,
  room: number,
  steps: LimitedClaimSteps,
  groupOf: Map<string, string>,
): Promise<ClaimedRecord[]> {
  const groups = await steps.readyGroups(settings.groupConcurrency !== null);
  // No job with a group is waiting: jobs enqueued without one before the type had groups are claimed in order.
  if (groups.length === 0) return steps.claimInOrder(room);
  // Strict order: a held group may run only the job that holds it, once that job is ready again.
  const held = settings.groupOrder === 'strict' ? await steps.heldGroups() : new Map<string, string | null>();
  const capOf = (g: ReadyGroup): number =>
    held.has(g.group)
      ? held.get(g.group) !== null && g.active === 0
        ? 1
        : 0
      : settings.groupConcurrency === null || g.group === NO_GROUP
        ? room
        : Math.min(room, settings.groupConcurrency - g.active);
  const open = groups
    .map((g) => ({ group: g.group, turn: g.lastTurn ?? 0, cap: capOf(g) }))
    .filter((g) => g.cap > 0)
    .sort((a, b) => a.turn - b.turn || (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
  // Candidates are read for `room` groups at a time, in turn order, until they are enough for the claim (a group
  // may have none the claim can take: not due, or of versions it does not read).
  const candidates = new Map<string, string[]>();
  let found = 0;
  for (const { group } of open) {
    const holder = held.get(group);
    if (holder) {
      candidates.set(group, [holder]);
      found += 1;
    }
  }
  const free = open.filter(({ group }) => !held.has(group));
  for (let at = 0; at < free.length && found < room; at += room) {
    for (const [group, ids] of await steps.candidates(free.slice(at, at + room))) {
      candidates.set(group, ids);
      found += ids.length;
    }
  }
  const chosen: string[] = [];
  const chosenGroup = new Map<string, string>();
  for (let round = 0; chosen.length < room; round++) {
    let any = false;
    for (const { group } of open) {
      const id = candidates.get(group)?.[round];
      if (id === undefined) continue;
      any = true;
      chosen.push(id);
      chosenGroup.set(id, group);
      if (chosen.length >= room) break;
    }
    if (!any) break;
  }
  if (chosen.length === 0) return [];
  const leased = await steps.lease(chosen);
  for (const job of leased) groupOf.set(job.id, chosenGroup.get(job.id) ?? NO_GROUP);
  return leased;
}
