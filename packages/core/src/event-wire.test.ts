import { describe, expect, it } from 'vitest';
import { decodeEventBatch, encodeEventBatch } from './event-wire.ts';
import type { JobEvent, ResyncEvent } from './events.ts';
import { isPlainJson } from './plain-json.ts';

describe('the job-event stream codec', () => {
  it('round-trips every kind of event, as plain JSON, naming each job type once per batch', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    const events: (JobEvent | ResyncEvent)[] = [
      { type: 'resync', at },
      { type: 'enqueued', id: 'a', name: 'mail', version: 1, at },
      { type: 'started', id: 'a', name: 'mail', version: 1, at, attempt: 1 },
      { type: 'progress', id: 'a', name: 'mail', version: 1, at, attempt: 1, progress: 40 },
      { type: 'failed', id: 'a', name: 'mail', version: 1, at, attempt: 1, error: { message: 'no' }, willRetry: true },
      { type: 'completed', id: 'b', name: 'report', version: 2, at, attempt: 2, result: { rows: [1, 2] } },
      { type: 'dead', id: 'c', name: 'mail', version: 1, at, attempt: 3, error: { message: 'x', permanent: true } },
      { type: 'cancelled', id: 'd', name: 'report', version: 2, at },
    ];
    const batch = encodeEventBatch(events);
    expect(batch.names).toEqual(['mail', 'report']);
    expect(isPlainJson(batch)).toBe(true);
    expect(decodeEventBatch(JSON.parse(JSON.stringify(batch)))).toEqual(events);
  });

  it('skips a row it cannot read (a type or name a newer server sends)', () => {
    expect(
      decodeEventBatch({
        names: ['mail'],
        events: [
          [99, 'a', 0, 1, 0, 0],
          [0, 'b', 5, 1, 0, 0],
        ],
      }),
    ).toEqual([]);
  });
});
