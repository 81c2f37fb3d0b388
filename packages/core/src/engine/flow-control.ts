import { WorkqError } from '../errors.ts';
import { JOB_STATES, type JobState } from '../jobs.ts';
import type { Clock } from './clock.ts';
import {
  type JobCount,
  type NewJob,
  NO_GROUP,
  type QueueLimits,
  type QueueSettings,
  type QueueSettingsChange,
  type Store,
} from './store.ts';

/** Limits to change with `setLimits`: a limit left out stays as it is; `null` clears it. */
export type LimitsChange = { [K in keyof QueueLimits]?: QueueLimits[K] | null };

/** Counts of one job type's jobs by visible state. */
export type StateCounts = Record<JobState, number>;

/** One job type as `admin.queues()` shows it. */
export interface QueueInfo {
  name: string;
  paused: boolean;
  /** When the type's hold (`ctx.rateLimited`) ends; absent when it is not held, or its hold has ended. */
  heldUntil?: Date;
  limits: QueueLimits;
  /** Its jobs by state, every version together. */
  counts: StateCounts;
  /** Its jobs by state, per version enqueued, oldest version first. */
  versions: { version: number; counts: StateCounts }[];
}

const NO_LIMITS: QueueLimits = { concurrency: null, rateLimit: null, groupConcurrency: null, groupOrder: null };

function zeroCounts(): StateCounts {
  return Object.fromEntries(JOB_STATES.map((state) => [state, 0])) as StateCounts;
}

function checkPositive(value: unknown, what: string): number | null {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000_000_000) {
    throw new WorkqError(
      'VALIDATION',
      `${what} must be a whole number from 1 to 1,000,000,000, or null to clear it; got ${String(value)}.`,
    );
  }
  return value;
}

/**
 * Whether settings hold claims back in any way at `now` (limits all cleared, not paused and no hold running:
 * they do not).
 */
export function constrains(settings: QueueSettings | null, now: Date): settings is QueueSettings {
  if (settings === null) return false;
  const { paused, grouped, concurrency, rateLimit, groupConcurrency, groupOrder, heldUntil } = settings;
  const held = heldUntil !== null && heldUntil.getTime() > now.getTime();
  return (
    paused ||
    grouped ||
    held ||
    concurrency !== null ||
    rateLimit !== null ||
    groupConcurrency !== null ||
    groupOrder !== null
  );
}

/** Checks a `setLimits` change and returns the store change it makes. */
export function checkLimits(limits: LimitsChange): QueueSettingsChange {
  if (typeof limits !== 'object' || limits === null) {
    throw new WorkqError('VALIDATION', 'setLimits takes an object such as { concurrency: 20 }.');
  }
  const known = ['concurrency', 'rateLimit', 'groupConcurrency', 'groupOrder'];
  const unknown = Object.keys(limits).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    throw new WorkqError('VALIDATION', `Unknown limit ${unknown.join(', ')}: the limits are ${known.join(', ')}.`);
  }
  const change: QueueSettingsChange = {};
  if (limits.concurrency !== undefined) change.concurrency = checkPositive(limits.concurrency, 'concurrency');
  if (limits.groupConcurrency !== undefined) {
    change.groupConcurrency = checkPositive(limits.groupConcurrency, 'groupConcurrency');
  }
  if (limits.groupOrder !== undefined) {
    if (limits.groupOrder !== null && limits.groupOrder !== 'strict') {
      throw new WorkqError(
        'VALIDATION',
        `groupOrder must be 'strict' (a failed job holds its group), or null to clear it; got ${String(limits.groupOrder)}.`,
      );
    }
    change.groupOrder = limits.groupOrder;
  }
  if (limits.rateLimit !== undefined) {
    const rate = limits.rateLimit;
    if (rate !== null && (typeof rate !== 'object' || Array.isArray(rate))) {
      throw new WorkqError(
        'VALIDATION',
        'rateLimit must be { max, perMs } (for example { max: 100, perMs: 1000 }), or null to clear it.',
      );
    }
    change.rateLimit =
      rate === null
        ? null
        : {
            max: checkPositive(rate.max, 'rateLimit.max') as number,
            perMs: checkPositive(rate.perMs, 'rateLimit.perMs') as number,
          };
  }
  return change;
}

/**
 * Whether the limits a change leaves (`current`: those stored, or `null` when none are, changed by `change`)
 * hold `groupOrder: 'strict'` beside a `groupConcurrency` other than 1, which stores refuse
 * (`FlowControlStore.updateQueueSettings`): a held group runs its jobs one at a time.
 */
export function breaksStrictOrder(current: QueueLimits | null, change: QueueSettingsChange): boolean {
  const after = groupLimitsAfter(current, change);
  return after.groupOrder === 'strict' && after.groupConcurrency !== 1;
}

function groupLimitsAfter(current: QueueLimits | null, change: QueueSettingsChange) {
  return {
    groupOrder: change.groupOrder !== undefined ? change.groupOrder : (current?.groupOrder ?? null),
    groupConcurrency:
      change.groupConcurrency !== undefined ? change.groupConcurrency : (current?.groupConcurrency ?? null),
  };
}

/** The `VALIDATION` error for a change a store refused as `breaksStrictOrder`, naming the limits it would leave. */
function strictOrderRefused(current: QueueLimits | null, change: QueueSettingsChange): WorkqError {
  const { groupConcurrency } = groupLimitsAfter(current, change);
  return new WorkqError(
    'VALIDATION',
    `groupOrder 'strict' needs groupConcurrency 1 (one job of a group at a time); the limits would have groupConcurrency ${String(groupConcurrency)}. Set { groupConcurrency: 1, groupOrder: 'strict' } together, or clear groupOrder with null first.`,
  );
}

/**
 * The engine's side of flow control: pausing, limits and groups, set in the store, and the settings every
 * server reads from it, kept here for `refreshMs` at most (or until a wake-up says they changed) as a hint of
 * which claim a type needs. The store decides in the claim itself whether they hold it back (`Claims`).
 */
export class FlowControl {
  private cache: { settings: Map<string, QueueSettings>; loadedAt: number } | null = null;
  private loading: Promise<Map<string, QueueSettings>> | null = null;
  /** Moves at each `forget`: a read that began before it is not kept (it may predate the change). */
  private generation = 0;
  private readonly changeListeners = new Set<(name: string) => void>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly refreshMs: number,
  ) {}

  /** The settings of `name`, or `null` when it has none; read from the store at most once per `refreshMs`. */
  async settingsOf(name: string): Promise<QueueSettings | null> {
    return (await this.all()).get(name) ?? null;
  }

  /** Forgets what was read, so the next claim reads the settings again (another server changed them). */
  forget(): void {
    this.cache = null;
    this.loading = null;
    this.generation++;
  }

  /** Called with a type's name when this process changed its settings. */
  onChange(listener: (name: string) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /**
   * Whether `name`'s settings leave its claims free (not paused, no limit, no groups): only then may an insert
   * lease a job of it to a waiting claim, since a limited claim must count and take turns first.
   */
  async leavesClaimsFree(name: string): Promise<boolean> {
    return !constrains(await this.settingsOf(name), this.clock.now());
  }

  /**
   * Before new jobs are inserted: marks their types grouped in the store when they bring the first groups
   * (claims of a grouped type take turns between groups), and gives the jobs of a grouped type that have no
   * group the group `NO_GROUP`, so they take their turns as one group.
   */
  async placeInGroups(jobs: readonly NewJob[]): Promise<void> {
    const grouped = new Set<string>();
    for (const name of new Set(jobs.map((job) => job.name))) {
      const settings = await this.settingsOf(name);
      if (settings?.grouped) grouped.add(name);
      else if (jobs.some((job) => job.name === name && job.group != null)) {
        await this.change(name, { grouped: true });
        grouped.add(name);
      }
    }
    for (const job of jobs) if (job.group == null && grouped.has(job.name)) job.group = NO_GROUP;
  }

  /**
   * Applies `change` to the settings of `name` in the store and tells this process's listeners. Once it
   * resolves, every claim that starts, on any server, honours the change (see `Claims.completeAndClaim`).
   * `VALIDATION`, with nothing changed, for a change that would hold strict group order without
   * `groupConcurrency: 1` (`breaksStrictOrder`).
   */
  async change(name: string, change: QueueSettingsChange): Promise<QueueSettings> {
    const settings = await this.store.updateQueueSettings(name, change, this.clock.now());
    if (!settings) {
      // Refused as one conditional write; the settings are read only to name what the change would leave.
      const [current] = await this.store.listQueueSettings(name);
      throw strictOrderRefused(current ?? null, change);
    }
    if (this.cache) this.cache.settings.set(name, settings);
    for (const listener of this.changeListeners) listener(name);
    return settings;
  }

  /** Every job type with jobs or settings, with its settings (a hold when it runs past `now`) and its counts. */
  async queues(counts: readonly JobCount[], now: Date): Promise<QueueInfo[]> {
    const settings = new Map((await this.store.listQueueSettings()).map((s) => [s.name, s]));
    const queues = new Map<string, QueueInfo>();
    const queueOf = (name: string): QueueInfo => {
      let queue = queues.get(name);
      if (!queue) {
        const s = settings.get(name);
        const limits = s
          ? {
              concurrency: s.concurrency,
              rateLimit: s.rateLimit,
              groupConcurrency: s.groupConcurrency,
              groupOrder: s.groupOrder,
            }
          : NO_LIMITS;
        const held = s?.heldUntil != null && s.heldUntil.getTime() > now.getTime() ? { heldUntil: s.heldUntil } : {};
        queue = {
          name,
          paused: s?.paused ?? false,
          ...held,
          limits: { ...limits },
          counts: zeroCounts(),
          versions: [],
        };
        queues.set(name, queue);
      }
      return queue;
    };
    for (const name of settings.keys()) queueOf(name);
    for (const { name, version, state, count } of counts) {
      const queue = queueOf(name);
      queue.counts[state] += count;
      let byVersion = queue.versions.find((v) => v.version === version);
      if (!byVersion) {
        byVersion = { version, counts: zeroCounts() };
        queue.versions.push(byVersion);
      }
      byVersion.counts[state] += count;
    }
    for (const queue of queues.values()) queue.versions.sort((a, b) => a.version - b.version);
    return [...queues.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * The settings read last. Once they are `refreshMs` old they are read again, but in the background: the
   * caller (an enqueue, a claim) goes on with the old ones, which are as good a hint as they were a moment ago.
   * Only with none at all (at start, or after `forget`) does it wait for the read.
   */
  private async all(): Promise<Map<string, QueueSettings>> {
    const nowMs = this.clock.now().getTime();
    const { cache } = this;
    if (cache && nowMs - cache.loadedAt < this.refreshMs) return cache.settings;
    const loading = this.load(nowMs);
    if (!cache) return loading;
    // A failed background read leaves the old settings in place; the next call after it reads again.
    loading.catch(() => undefined);
    return cache.settings;
  }

  private load(nowMs: number): Promise<Map<string, QueueSettings>> {
    if (this.loading) return this.loading;
    const generation = this.generation;
    const loading = this.store
      .listQueueSettings()
      .then((list) => {
        const settings = new Map(list.map((s) => [s.name, s]));
        if (generation === this.generation) this.cache = { settings, loadedAt: nowMs };
        return settings;
      })
      .finally(() => {
        if (this.loading === loading) this.loading = null;
      });
    this.loading = loading;
    return loading;
  }
}
