import { CancelledLeases } from './dispatch/cancelled-leases.ts';
import { ClaimDispatcher, type DispatcherOptions } from './dispatch/claim-dispatcher.ts';
import type { Clock } from './engine/clock.ts';
import { createEngine, type Engine, type EngineOptions } from './engine/engine.ts';
import type { Store } from './engine/store.ts';
import { EventHub, type EventHubOptions } from './notify/event-hub.ts';
import { WakeupBus } from './notify/wakeup-bus.ts';
import { leaseSweeper, pruner, type Role, RoleRunner } from './roles/role-runner.ts';

export interface QueueRuntimeOptions {
  /** The store every part works on; closed by `close`. */
  store: Store;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** The engine's own options (see `EngineOptions`). */
  engine?: Omit<EngineOptions, 'store' | 'clock' | 'events'>;
  /** How claims wait, batch and report (see `DispatcherOptions`). */
  dispatcher: DispatcherOptions;
  /** How the event hub buffers for its subscribers (see `EventHubOptions`). */
  events?: Omit<EventHubOptions, 'readJob' | 'clock'>;
  /** Roles the leader runs beside the lease sweeper and the pruner (a server's cron scheduler). */
  roles?: readonly Role[];
  /** The lease on the maintenance roles' leadership. @defaultValue 15_000 */
  leadershipLeaseMs?: number;
  /** Told of a role that failed (`lease sweep`, `prune`, a role's own name) or an election the store could not answer. */
  onRoleError?: (what: string, error: unknown) => void;
}

/**
 * The queue, composed: the engine over the store, the wake-up bus between servers, the event hub that fans job
 * events out, the claim dispatcher, and the maintenance roles under one leadership. A server adds transport,
 * auth, limits and metrics around it.
 */
export interface QueueRuntime {
  readonly engine: Engine;
  readonly bus: WakeupBus;
  readonly events: EventHub;
  readonly dispatcher: ClaimDispatcher;
  /** What waiting lease extensions hear of their jobs' cancellations in this process. */
  readonly cancellations: CancelledLeases;
  readonly roles: RoleRunner;
  /** Starts the maintenance roles (leading where this server is elected, or the store has no election). */
  start(): void;
  /**
   * Stops the roles (resigning the leadership), ends the event subscriptions with a retryable `UNAVAILABLE`,
   * closes the bus (waiting claims and lease extensions answer at once), awaits `drain` (the requests still being answered), then
   * closes the engine and its store. Idempotent.
   */
  close(drain?: () => Promise<void>): Promise<void>;
}

/** Builds the queue over `options.store`, with the bus listening; call `start` to run the roles. */
export async function createQueueRuntime(options: QueueRuntimeOptions): Promise<QueueRuntime> {
  const { store, onRoleError } = options;
  // The engine's event sink: job events go to this server's subscribers and, over the bus, to the other servers'.
  const events = new EventHub({ ...options.events, clock: options.clock, readJob: (id) => engine.get(id) });
  const engine = createEngine({ ...options.engine, store, clock: options.clock, events });
  const bus = new WakeupBus(engine, store.notifier);
  await bus.start();
  events.attach(bus);
  const dispatcher = new ClaimDispatcher(engine, bus, options.dispatcher);
  const cancellations = new CancelledLeases({
    onCancelled: [(listener) => engine.onCancelled(listener), (listener) => bus.onCancelled(listener)],
  });
  const failed = (what: string) => (error: unknown) => onRoleError?.(what, error);
  const roles = new RoleRunner(engine, {
    leadershipLeaseMs: options.leadershipLeaseMs,
    roles: [
      leaseSweeper(engine, undefined, failed('lease sweep')),
      pruner(engine, undefined, failed('prune')),
      ...(options.roles ?? []),
    ],
    onError: onRoleError,
  });
  let closed: Promise<void> | undefined;
  const close = async (drain?: () => Promise<void>): Promise<void> => {
    await roles.close();
    events.close();
    await bus.close();
    cancellations.close();
    await drain?.();
    await engine.close();
  };
  return {
    engine,
    bus,
    events,
    dispatcher,
    cancellations,
    roles,
    start: () => roles.start(),
    close: (drain) => {
      closed ??= close(drain);
      return closed;
    },
  };
}
