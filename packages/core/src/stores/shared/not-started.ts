import type { StoredState } from '../../engine/store.ts';

/**
 * The states a store keeps a job not yet started in, both the engine's `waiting`. A job written with a run
 * time after its writer's clock is `delayed`: kept out of the claim index, so claims do not step over it, and
 * moved into `waiting` by the first claim of its name that finds it due.
 */
export const NOT_STARTED = ['delayed', 'waiting'] as const;

/** A job's state as a store keeps it: the engine's, or `delayed`. */
export type KeptState = StoredState | 'delayed';

/** The kept state of a job not yet started that runs at `runAt`, written at `now`. */
export function notStartedState(runAt: Date, now: Date): (typeof NOT_STARTED)[number] {
  return runAt.getTime() > now.getTime() ? 'delayed' : 'waiting';
}

/** The engine's state of a kept one. */
export function engineState(state: KeptState): StoredState {
  return state === 'delayed' ? 'waiting' : state;
}

/** The kept states an engine state covers: `waiting` is kept as `delayed` too. */
export function keptStates(state: StoredState): KeptState[] {
  return state === 'waiting' ? [...NOT_STARTED] : [state];
}
