import type { Clock } from '../../src/engine/clock.ts';

/** A clock that moves only when told to, so tests can cross lease and retry deadlines instantly. */
export class ManualClock implements Clock {
  private ms: number;

  constructor(start: Date = new Date('2026-01-01T00:00:00.000Z')) {
    this.ms = start.getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  advance(ms: number): Date {
    this.ms += ms;
    return this.now();
  }

  set(date: Date): void {
    this.ms = date.getTime();
  }
}
