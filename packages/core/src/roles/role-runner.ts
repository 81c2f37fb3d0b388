import type { Engine } from '../engine/engine.ts';
import { newLeaseToken } from '../engine/ids.ts';

/**
 * Work one server at a time does for all of them. The runner calls `lead`
 * when this server becomes the leader (at start, on a store without leader
 * election) and `stepDown` when it stops leading or closes.
 */
export interface Role {
  /** Names it in reports, e.g. `lease sweep`. */
  readonly name: string;
  lead(): void;
  /** Stops the role's work; resolves once work under way has ended. */
  stepDown(): Promise<void>;
}

export interface RoleRunnerOptions {
  /** The roles to run while this server leads. */
  roles: readonly Role[];
  /**
   * The lease on leadership: held while renewed every third of it, taken
   * over by another server this long after the leader stops renewing.
   * @defaultValue 15_000
   */
  leadershipLeaseMs?: number;
  /** Told of a role that failed, or of an election the store could not answer. @defaultValue nothing */
  onError?: (what: string, error: unknown) => void;
}

/** The role name servers elect one leader for: every maintenance role runs under it. */
const MAINTENANCE_ROLE = 'workq:maintenance';
const DEFAULT_LEADERSHIP_LEASE_MS = 15_000;

/**
 * Runs maintenance roles on the one server that leads. Where the store has
 * leader election (`Store.leadership`), the runner takes or renews the
 * leadership every third of its lease and runs the roles only while it
 * holds it; when the leader dies, another server takes over once its lease
 * runs out. Without election, every server runs them (each role is safe to
 * run on several servers at once; election only saves the repeated work).
 * Closing resigns, so another server takes over at once.
 */
export class RoleRunner {
  /** This server's name as a leader candidate; unique per start. */
  readonly holderId = newLeaseToken();
  private readonly leaseMs: number;
  private readonly renewEveryMs: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<void> | undefined;
  private isLeading = false;
  private closed = false;

  constructor(
    private readonly engine: Engine,
    private readonly options: RoleRunnerOptions,
  ) {
    this.leaseMs = options.leadershipLeaseMs ?? DEFAULT_LEADERSHIP_LEASE_MS;
    this.renewEveryMs = Math.max(1, Math.floor(this.leaseMs / 3));
  }

  /** Whether this server ran the roles at its last tick (always, on a store without election). */
  get leading(): boolean {
    return this.isLeading;
  }

  /** Starts the ticks; the first runs at once. */
  start(): void {
    this.schedule(0);
  }

  /** Stops the ticks, waits for a tick under way, steps the roles down and resigns the leadership if held. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
    if (!this.isLeading) return;
    this.isLeading = false;
    await this.stepDownAll();
    const election = this.engine.store.leadership;
    await election?.resign(MAINTENANCE_ROLE, this.holderId).catch((error: unknown) => this.report('resign', error));
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => {
        this.running = undefined;
        this.schedule(this.renewEveryMs);
      });
    }, delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const leading = await this.lead();
    if (leading === this.isLeading || this.closed) return;
    this.isLeading = leading;
    if (leading) {
      for (const role of this.options.roles) this.guard(role.name, () => role.lead());
    } else {
      await this.stepDownAll();
    }
  }

  private async stepDownAll(): Promise<void> {
    await Promise.all(
      this.options.roles.map((role) => role.stepDown().catch((error: unknown) => this.report(role.name, error))),
    );
  }

  private guard(what: string, work: () => void): void {
    try {
      work();
    } catch (error) {
      this.report(what, error);
    }
  }

  private async lead(): Promise<boolean> {
    const election = this.engine.store.leadership;
    if (!election) return true;
    try {
      return await election.tryLead(MAINTENANCE_ROLE, this.holderId, this.engine.clock.now(), this.leaseMs);
    } catch (error) {
      this.report('leader election', error);
      return false;
    }
  }

  private report(what: string, error: unknown): void {
    this.options.onError?.(what, error);
  }
}

/**
 * A role that runs `run` every `everyMs` while this server leads, the first
 * time at once; a run never overlaps the previous one.
 */
export function periodicRole(
  name: string,
  everyMs: number,
  run: () => Promise<unknown>,
  onError?: (error: unknown) => void,
): Role {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let current: Promise<void> | undefined;
  let active = false;
  const loop = () => {
    current = run()
      .then(
        () => undefined,
        (error: unknown) => onError?.(error),
      )
      .finally(() => {
        current = undefined;
        if (!active) return;
        timer = setTimeout(loop, everyMs);
        timer.unref();
      });
  };
  return {
    name,
    lead() {
      if (active) return;
      active = true;
      loop();
    },
    async stepDown() {
      active = false;
      clearTimeout(timer);
      await current;
    },
  };
}

/**
 * Puts back jobs whose leases expired. Claims also sweep as they pass, on
 * every server, so when the leader dies, sweeping goes on wherever workers
 * claim, and the next leader resumes the timer.
 */
export function leaseSweeper(engine: Engine, everyMs = 5_000, onError?: (error: unknown) => void): Role {
  return periodicRole('lease sweep', everyMs, () => engine.sweepExpiredLeases(), onError);
}

/**
 * Deletes finished jobs past their retention, and worker-registry rows not seen for a day
 * (`WORKER_REGISTRY_BOUNDS.retentionMs`). When the leader dies, pruning waits for the next leader.
 */
export function pruner(engine: Engine, everyMs = 60_000, onError?: (error: unknown) => void): Role {
  const prune = async () => {
    await engine.prune();
    await engine.pruneWorkers();
  };
  return periodicRole('prune', everyMs, prune, onError);
}
