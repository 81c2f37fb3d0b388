/** The one source of time for the engine; tests pass a clock they control. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
