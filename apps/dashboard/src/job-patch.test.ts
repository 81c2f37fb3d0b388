import { describe, expect, it } from 'vitest';
import type { JobFilter } from './job-list.ts';
import { countArrivals, patchRows, type ShownRow, shownState } from './job-patch.ts';
import type { LiveJobEvent } from './live.ts';

const AT = new Date('2026-01-01T00:00:10.000Z');
const NO_FILTER: JobFilter = { name: '', state: '', version: '', group: '', q: '', from: '', to: '' };

function row(id: string, changes: Partial<ShownRow> = {}): ShownRow {
  const time = new Date('2026-01-01T00:00:00.000Z');
  return {
    id,
    name: 'convert',
    version: 1,
    state: 'ready',
    attempts: 0,
    maxAttempts: 3,
    progress: 0,
    createdAt: time,
    updatedAt: time,
    runAt: time,
    ...changes,
  };
}

const event = (type: LiveJobEvent['type'], id: string, more: Partial<LiveJobEvent> = {}): LiveJobEvent => ({
  type,
  id,
  name: 'convert',
  version: 1,
  at: AT,
  ...more,
});

describe('patchRows and countArrivals', () => {
  it('moves the rows the events name through their states, leaving the others as they were', () => {
    const rows = [row('a'), row('b'), row('c', { state: 'active', attempts: 1 })];
    const after = patchRows(rows, [
      event('started', 'a', { attempt: 1 }),
      event('progress', 'a', { progress: 40 }),
      event('failed', 'c', { attempt: 1, willRetry: true, error: { message: 'disk full' } }),
    ]);
    expect(after[0]).toMatchObject({ state: 'active', attempts: 1, progress: 40, updatedAt: AT });
    expect(after[1]).toBe(rows[1]);
    expect(after[2]).toMatchObject({ state: 'scheduled', retrying: true, error: { message: 'disk full', attempt: 1 } });
    const ended = patchRows(after, [
      event('dead', 'c', { attempt: 3, error: { message: 'gave up', permanent: true } }),
      event('completed', 'a'),
    ]);
    expect(ended[0]).toMatchObject({ state: 'completed', finishedAt: AT });
    expect(ended[2]).toMatchObject({ state: 'dead', error: { message: 'gave up', permanent: true, attempt: 3 } });
    expect(ended[2]?.retrying).toBeUndefined();
  });

  it('counts new jobs only where the filter would list them', () => {
    const arrivals = [
      event('enqueued', 'x'),
      event('enqueued', 'y', { name: 'other' }),
      event('enqueued', 'z', { version: 2 }),
    ];
    expect(countArrivals(arrivals, NO_FILTER)).toBe(3);
    expect(countArrivals(arrivals, { ...NO_FILTER, name: 'convert' })).toBe(2);
    expect(countArrivals(arrivals, { ...NO_FILTER, name: 'convert', version: '2' })).toBe(1);
    expect(countArrivals(arrivals, { ...NO_FILTER, state: 'dead' })).toBe(0);
    expect(countArrivals(arrivals, { ...NO_FILTER, q: 'invoice-1' })).toBe(0);
    expect(countArrivals([event('completed', 'x')], NO_FILTER)).toBe(0);
  });
});

describe('shownState', () => {
  it('shows a scheduled job whose run time passed as ready, unless a retry is pending at an unknown time', () => {
    const later = row('a', { state: 'scheduled', runAt: new Date(AT.getTime() + 1000) });
    expect(shownState(later, AT.getTime())).toBe('scheduled');
    expect(shownState(later, AT.getTime() + 1000)).toBe('ready');
    expect(shownState({ ...later, retrying: true }, AT.getTime() + 1000)).toBe('scheduled');
  });
});
