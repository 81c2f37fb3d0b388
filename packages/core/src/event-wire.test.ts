import { describe, expect, it } from 'vitest';
import { decodeEventBatch, encodeEventBatch } from './event-wire.ts';
import { type JobEvent, type ResyncEvent, runsOfEvents } from './events.ts';
import { isPlainJson } from './plain-json.ts';

describe('the job-event stream codec', () => {
  it('round-trips every kind of event, as plain JSON, naming each job type once per batch', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    const resync: ResyncEvent = { type: 'resync', at };
    const events: JobEvent[] = [
      { type: 'enqueued', id: 'a', name: 'mail', version: 1, at },
      { type: 'enqueued', id: 'e', name: 'mail', version: 2, at },
      { type: 'started', id: 'a', name: 'mail', version: 1, at, attempt: 1 },
      { type: 'progress', id: 'a', name: 'mail', version: 1, at, attempt: 1, progress: 40 },
      { type: 'failed', id: 'a', name: 'mail', version: 1, at, attempt: 1, error: { message: 'no' }, willRetry: true },
      { type: 'completed', id: 'b', name: 'report', version: 2, at, attempt: 2, result: { rows: [1, 2] } },
      { type: 'completed', id: 'f', name: 'report', version: 2, at, attempt: 1 },
      { type: 'dead', id: 'c', name: 'mail', version: 1, at, attempt: 3, error: { message: 'x', permanent: true } },
      { type: 'cancelled', id: 'd', name: 'report', version: 2, at },
    ];
    const runs = runsOfEvents(events);
    // Events of one type, name and time share a run: the two enqueued, the two completed.
    expect(runs.map((run) => run.ids)).toEqual([['a', 'e'], ['a'], ['a'], ['a'], ['b', 'f'], ['c'], ['d']]);
    const batch = encodeEventBatch([resync, ...runs]);
    expect(batch.names).toEqual(['mail', 'report']);
    expect(isPlainJson(batch)).toBe(true);
    expect(decodeEventBatch(JSON.parse(JSON.stringify(batch)))).toEqual([resync, ...events]);
  });

  it('skips a run it cannot read (a type or name a newer server sends)', () => {
    expect(
      decodeEventBatch({
        names: ['mail'],
        runs: [
          [99, 0, 0, ['a'], [1], 0, 0],
          [0, 5, 0, ['b'], [1], 0, 0],
        ],
      }),
    ).toEqual([]);
  });
});
