/**
 * The wake-up bus's wire protocol: what one server tells the others over the
 * store's notifier, encoded and decoded here and nowhere else.
 *
 * A notification is newline-separated parts. The first names the sender
 * (`from:<instance>`), so that an instance skips its own notifications; the
 * rest are messages:
 * - `<job name>`: jobs of that type may have become ready;
 * - `finished:<id>,<id>,…`: those jobs finished;
 * - `cancelled:<id>:<worker id>`: that job was cancelled, and that worker
 *   held it last (both URI-encoded; no worker id: it never ran), so the
 *   server where that worker waits on a lease extension answers it at once;
 * - `watching:<instance>`: that instance has result requests waiting, so the
 *   others should announce the jobs they finish;
 * - `*`: wake-ups may have been missed (a store notifier's resync);
 * - `listening:<instance>`: that instance has job-event subscribers, so the
 *   others should send it their job events;
 * - `events-lost`: the sender dropped job events it could not send in time;
 * - `settings:<job name>`: that type's flow-control settings (pause, limits)
 *   changed, so the others read them again and wake its waiting claims;
 * - `schedules:changed`: a schedule kept in the store was written or removed,
 *   so the leading instance reads the stored schedules again;
 * - `schemas:<job name>`: a registered payload schema of that type was
 *   removed, so the others forget the entries and validators they hold for it;
 * - `event:<json>`: one job event (`BusJobEvent`), as ASCII-only JSON of at
 *   most `MAX_EVENT_PART_CHARS` characters. An event that would be longer is
 *   sent without its `result` and `error`, marked `omitted`: the receiver
 *   reads those from the job. So a notification stays within PostgreSQL's
 *   NOTIFY limit (8000 bytes) whatever a handler returns.
 * No job name contains `:` or a newline, so no part is taken for another.
 * The format is the one earlier servers speak, so servers of either version
 * share a store during a rolling deploy (an earlier server takes an
 * `event:` or `listening:` part for a job name that no consumer waits on).
 */

import { fromStoredValue, toStoredValue } from '../engine/stored-value.ts';
import type { JobEvent } from '../events.ts';

/** A job event between servers: `omitted` when its `result` and `error` were too large to carry. */
export interface BusJobEvent extends JobEvent {
  omitted?: true;
}

/** One message between servers. */
export type WakeupMessage =
  | { readonly type: 'ready'; readonly name: string }
  | { readonly type: 'finished'; readonly ids: readonly string[] }
  | { readonly type: 'cancelled'; readonly id: string; readonly workerId: string | null }
  | { readonly type: 'watching'; readonly instance: string }
  | { readonly type: 'resync' }
  | { readonly type: 'listening'; readonly instance: string }
  | { readonly type: 'eventsLost' }
  | { readonly type: 'settings'; readonly name: string }
  | { readonly type: 'schedules' }
  | { readonly type: 'schemas'; readonly name: string }
  | { readonly type: 'event'; readonly event: BusJobEvent };

/** A decoded notification: its sender (absent from a store's own `'*'`) and its messages. */
export interface WakeupNotification {
  readonly from: string | undefined;
  readonly messages: readonly WakeupMessage[];
}

const FROM = 'from:';
const FINISHED = 'finished:';
const CANCELLED = 'cancelled:';
const WATCHING = 'watching:';
const RESYNC = '*';
const LISTENING = 'listening:';
const EVENT = 'event:';
const EVENTS_LOST = 'events-lost';
const SETTINGS = 'settings:';
const SCHEDULES = 'schedules:changed';
const SCHEMAS = 'schemas:';

/** The longest `event:` part: several fit in one notification, and one always does. */
export const MAX_EVENT_PART_CHARS = 2_000;

/** Ids per `finished` part. */
const FINISHED_IDS_PER_PART = 100;

function encodeMessage(message: WakeupMessage): string[] {
  switch (message.type) {
    case 'ready':
      return [message.name];
    case 'cancelled':
      return [`${CANCELLED}${encodeURIComponent(message.id)}:${encodeURIComponent(message.workerId ?? '')}`];
    case 'watching':
      return [`${WATCHING}${message.instance}`];
    case 'resync':
      return [RESYNC];
    case 'listening':
      return [`${LISTENING}${message.instance}`];
    case 'event':
      return [encodeEvent(message.event)];
    case 'eventsLost':
      return [EVENTS_LOST];
    case 'settings':
      return [`${SETTINGS}${message.name}`];
    case 'schedules':
      return [SCHEDULES];
    case 'schemas':
      return [`${SCHEMAS}${message.name}`];
    case 'finished': {
      const parts: string[] = [];
      for (let at = 0; at < message.ids.length; at += FINISHED_IDS_PER_PART) {
        parts.push(`${FINISHED}${message.ids.slice(at, at + FINISHED_IDS_PER_PART).join(',')}`);
      }
      return parts;
    }
  }
}

function decodePart(part: string): WakeupMessage | undefined {
  if (part === '') return undefined;
  if (part === RESYNC) return { type: 'resync' };
  if (part === EVENTS_LOST) return { type: 'eventsLost' };
  if (part.startsWith(FINISHED)) return { type: 'finished', ids: part.slice(FINISHED.length).split(',') };
  if (part.startsWith(CANCELLED)) return decodeCancelled(part.slice(CANCELLED.length));
  if (part.startsWith(WATCHING)) return { type: 'watching', instance: part.slice(WATCHING.length) };
  if (part.startsWith(SETTINGS)) return { type: 'settings', name: part.slice(SETTINGS.length) };
  if (part === SCHEDULES) return { type: 'schedules' };
  if (part.startsWith(SCHEMAS)) return { type: 'schemas', name: part.slice(SCHEMAS.length) };
  if (part.startsWith(LISTENING)) return { type: 'listening', instance: part.slice(LISTENING.length) };
  if (part.startsWith(EVENT)) return decodeEvent(part.slice(EVENT.length));
  if (part.startsWith(FROM)) return undefined;
  return { type: 'ready', name: part };
}

/**
 * Encodes `messages` from instance `from` as few notifications as fit in
 * `maxBytes` each (PostgreSQL's NOTIFY takes under 8000 bytes).
 */
export function encodeWakeups(from: string, messages: readonly WakeupMessage[], maxBytes: number): string[] {
  const header = `${FROM}${from}`;
  const room = maxBytes - header.length - 1;
  const notifications: string[] = [];
  let body = '';
  for (const part of messages.flatMap(encodeMessage)) {
    if (body !== '' && body.length + 1 + part.length > room) {
      notifications.push(`${header}\n${body}`);
      body = '';
    }
    body = body === '' ? part : `${body}\n${part}`;
  }
  if (body !== '') notifications.push(`${header}\n${body}`);
  return notifications;
}

/** Decodes one notification; unknown or empty parts are dropped. A sender-less `'*'` is a store's resync. */
export function decodeWakeups(notification: string): WakeupNotification {
  const parts = notification.split('\n');
  const from = parts[0]?.startsWith(FROM) ? parts[0].slice(FROM.length) : undefined;
  const messages: WakeupMessage[] = [];
  for (const part of parts) {
    const message = decodePart(part);
    if (message) messages.push(message);
  }
  return { from, messages };
}

function decodeCancelled(body: string): WakeupMessage | undefined {
  const [id, workerId, ...rest] = body.split(':');
  if (!id || workerId === undefined || rest.length > 0) return undefined;
  try {
    return { type: 'cancelled', id: decodeURIComponent(id), workerId: workerId ? decodeURIComponent(workerId) : null };
  } catch {
    return undefined;
  }
}

/** JSON with every non-ASCII character escaped, so its length in characters is its length in bytes. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function encodeEvent(event: BusJobEvent): string {
  const { at, result, ...rest } = event;
  const wire: Record<string, unknown> = { ...rest, at: at.getTime() };
  if (result !== undefined) {
    try {
      wire.result = toStoredValue(result);
    } catch {
      wire.omitted = true;
    }
  }
  const part = `${EVENT}${asciiJson(wire)}`;
  if (part.length <= MAX_EVENT_PART_CHARS) return part;
  const { result: _result, error: _error, ...small } = wire;
  return `${EVENT}${asciiJson({ ...small, omitted: true })}`;
}

function decodeEvent(json: string): WakeupMessage | undefined {
  try {
    const wire = JSON.parse(json) as Record<string, unknown>;
    if (typeof wire.id !== 'string' || typeof wire.name !== 'string' || typeof wire.type !== 'string') {
      return undefined;
    }
    const event = { ...wire, at: new Date(Number(wire.at)) } as BusJobEvent;
    if ('result' in wire) event.result = fromStoredValue(wire.result);
    return { type: 'event', event };
  } catch {
    return undefined;
  }
}
