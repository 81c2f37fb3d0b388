import { describe, expect, it } from 'vitest';
import { decodeEventBatch, encodeEventBatch, eventBatchWireParts, type WireEventBatch } from './event-wire.ts';
import { type JobEvent, type JobEventRun, type ResyncEvent, runsOfEvents } from './events.ts';
import { isPlainJson } from './plain-json.ts';
import { wireTransformer } from './wire-transformer.ts';

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

describe('eventBatchWireParts', () => {
  const at = new Date('2026-01-02T03:04:05.678Z');
  const text = (parts: (string | Uint8Array)[]) =>
    parts.map((part) => (typeof part === 'string' ? part : new TextDecoder().decode(part))).join('');

  it('is, byte for byte, the serialized batch when it is plain JSON', () => {
    const runs = runsOfEvents([
      { type: 'enqueued', id: 'a', name: 'mail', version: 1, at },
      { type: 'completed', id: 'b', name: 'report', version: 2, at, attempt: 2, result: { rows: [1, 2], é: '✓' } },
      { type: 'failed', id: 'c', name: 'mail', version: 1, at, attempt: 1, error: { message: 'no' }, willRetry: true },
    ]);
    const batch = [{ type: 'resync', at } as ResyncEvent, ...runs];
    expect(text(eventBatchWireParts(batch))).toBe(JSON.stringify(wireTransformer.serialize(encodeEventBatch(batch))));
    expect(text(eventBatchWireParts([]))).toBe(JSON.stringify(wireTransformer.serialize(encodeEventBatch([]))));
  });

  it('reads back as the same batch when a result is not plain JSON', () => {
    const result = { when: new Date(5), big: 10n ** 20n, tags: new Set(['x']) };
    const runs = runsOfEvents([
      { type: 'enqueued', id: 'a', name: 'mail', version: 1, at },
      { type: 'completed', id: 'b', name: 'report', version: 2, at, attempt: 1, result },
      { type: 'completed', id: 'c', name: 'mail', version: 1, at, attempt: 1, result: { plain: true } },
    ]);
    const read = wireTransformer.deserialize(JSON.parse(text(eventBatchWireParts(runs))));
    expect(read).toEqual(encodeEventBatch(runs));
    expect(decodeEventBatch(read as WireEventBatch)[1]).toMatchObject({ id: 'b', result });
  });

  it('serializes a run once, however many batches carry it', () => {
    let reads = 0;
    const result = {
      get rows() {
        reads += 1;
        return [1, 2, 3];
      },
    };
    const [run] = runsOfEvents([{ type: 'completed', id: 'b', name: 'report', version: 1, at, attempt: 1, result }]);
    const first = eventBatchWireParts([run as JobEventRun]);
    const readsForOne = reads;
    for (let subscriber = 0; subscriber < 40; subscriber++) eventBatchWireParts([run as JobEventRun]);
    expect(reads).toBe(readsForOne);
    // The run's bytes are the same object in every batch: nothing is copied per subscriber.
    expect(eventBatchWireParts([run as JobEventRun])[2]).toBe(first[2]);
  });
});
