import type { JobState } from '@workq/core';
import type { JobFilter, JobRow } from './job-list.ts';
import type { LiveJobEvent } from './live.ts';

/** A row as the list shows it: the server's row, with what events said since. */
export interface ShownRow extends JobRow {
  /** An attempt failed and another follows at a run time the event does not carry. */
  retrying?: boolean;
}

/**
 * The rows after `events`. Rows the events do not name are kept as they are (the same objects); no call is
 * made: the list changes without re-reading.
 */
export function patchRows(rows: readonly ShownRow[], events: readonly LiveJobEvent[]): ShownRow[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  for (const event of events) {
    const row = byId.get(event.id);
    if (row) byId.set(event.id, applyEvent(row, event));
  }
  return rows.map((row) => byId.get(row.id) ?? row);
}

/** How many of `events` announce a new job the filter would list. */
export function countArrivals(events: readonly LiveJobEvent[], filter: JobFilter): number {
  return events.filter((event) => event.type === 'enqueued' && wouldList(filter, event)).length;
}

function applyEvent(row: ShownRow, event: LiveJobEvent): ShownRow {
  const next: ShownRow = { ...row, updatedAt: event.at };
  delete next.retrying;
  const error = event.error && { ...event.error, attempt: event.attempt ?? row.attempts, at: event.at };
  switch (event.type) {
    case 'enqueued':
      return { ...next, state: 'ready' };
    case 'started':
      return { ...next, state: 'active', attempts: event.attempt ?? row.attempts + 1 };
    case 'progress':
      return { ...next, progress: event.progress ?? row.progress };
    case 'completed':
      return { ...next, state: 'completed', finishedAt: event.at };
    case 'failed':
      return event.willRetry === false
        ? next
        : { ...next, state: 'scheduled', retrying: true, ...(error ? { error } : {}) };
    case 'dead':
      return { ...next, state: 'dead', finishedAt: event.at, ...(error ? { error } : {}) };
    case 'cancelled':
      return { ...next, state: 'cancelled', finishedAt: event.at };
    case 'waiting-children':
      return { ...next, state: 'waiting-children' };
  }
}

/** Whether a job just enqueued belongs in the list: of its type and version, waiting, and not excluded by search. */
function wouldList(filter: JobFilter, event: LiveJobEvent): boolean {
  if (filter.q || filter.group || filter.to) return false;
  if (filter.name && filter.name !== event.name) return false;
  if (filter.version && Number(filter.version) !== event.version) return false;
  return !filter.state || filter.state === 'ready' || filter.state === 'scheduled';
}

/** The state to show now: a scheduled row whose run time has passed is ready (no event says so). */
export function shownState(row: ShownRow, nowMs = Date.now()): JobState {
  if (row.state === 'scheduled' && !row.retrying && new Date(row.runAt).getTime() <= nowMs) return 'ready';
  return row.state;
}
