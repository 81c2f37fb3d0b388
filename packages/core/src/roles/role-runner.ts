import type { Engine } from '../engine/engine.ts';
import { newLeaseToken } from '../engine/ids.ts';

/** Work one server at a time does for all of them, on a timer. */
export interface Role {
  /** Names it in reports, e.g. `lease sweep`. */
  readonly name: string;
  /** How often it runs while this server leads. */
  readonly everyMs: number;
  run(): Promise<unknown>;
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
 * leader election (`capabilities.leadership`), the runner takes or renews the
 * leadership every third of its lease and runs the roles only while it
 * holds it; when the leader dies, another server takes over once its lease
 * runs out. Without election, every server runs them (each role is safe to
 * run on several servers at once; election only saves the repeated work).
 * Closing resigns, so another server takes over at once.
 */
export class RoleRunner {
  /** This server's name as a leader candidate; unique per start. */
  readonly holderId = newLeaseToken();
  private readonly lastRunMs = new Map<Role, number>();
  private readonly leaseMs: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<void> | undefined;
  private isLeading = false;
  private closed = false;

  constructor(
    private readonly engine: Engine,
    private readonly options: RoleRunnerOptions,
  ) {
    this.leaseMs = options.leadershipLeaseMs ?? DEFAULT_LEADERSHIP_LEASE_MS;
  }

  /** Whether this server ran the roles at its last tick (always, on a store without election). */
  get leading(): boolean {
    return this.isLeading;
  }

  /** Starts the ticks; the first runs at once. */
  start(): void {
    this.schedule(0);
  }

  /** Stops the ticks, waits for a tick under way, and resigns the leadership if held. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
    const election = this.engine.store.leadership;
    if (election && this.isLeading) {
      await election.resign(MAINTENANCE_ROLE, this.holderId).catch((error: unknown) => this.report('resign', error));
    }
    this.isLeading = false;
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => {
        this.running = undefined;
        this.schedule(this.nextDelayMs());
      });
    }, delayMs);
    this.timer.unref();
  }

  /** Until the next renewal or the next role due, whichever comes first. */
  private nextDelayMs(): number {
    const renewEveryMs = Math.max(1, Math.floor(this.leaseMs / 3));
    const everyMs = Math.min(...this.options.roles.map((role) => role.everyMs));
    return Math.min(renewEveryMs, Number.isFinite(everyMs) ? everyMs : renewEveryMs);
  }

  private async tick(): Promise<void> {
    this.isLeading = await this.lead();
    if (!this.isLeading) return;
    const nowMs = this.engine.clock.now().getTime();
    for (const role of this.options.roles) {
      if (this.closed) return;
      if (nowMs - (this.lastRunMs.get(role) ?? Number.NEGATIVE_INFINITY) < role.everyMs) continue;
      this.lastRunMs.set(role, nowMs);
      await role.run().catch((error: unknown) => this.report(role.name, error));
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

/** Puts back jobs whose leases expired (claims also do, as they pass); a leader that dies leaves it to them. */
export function leaseSweeper(engine: Engine, everyMs = 5_000): Role {
  return { name: 'lease sweep', everyMs, run: () => engine.sweepExpiredLeases() };
}

/** Deletes finished jobs past their retention; a leader that dies delays it by the leadership lease. */
export function pruner(engine: Engine, everyMs = 60_000): Role {
  return { name: 'prune', everyMs, run: () => engine.prune() };
}
