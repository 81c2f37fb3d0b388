/**
 * The wake-up bus's wire protocol: what one server tells the others over the
 * store's notifier, encoded and decoded here and nowhere else.
 *
 * A notification is newline-separated parts. The first names the sender
 * (`from:<instance>`), so that an instance skips its own notifications; the
 * rest are messages:
 * - `<job name>`: jobs of that type may have become ready;
 * - `finished:<id>,<id>,…`: those jobs finished;
 * - `watching:<instance>`: that instance has result requests waiting, so the
 *   others should announce the jobs they finish;
 * - `*`: wake-ups may have been missed (a store notifier's resync).
 * No job name contains `:` or a newline, so no part is taken for another.
 * The format is the one earlier servers speak, so servers of either version
 * share a store during a rolling deploy.
 */

/** One message between servers. */
export type WakeupMessage =
  | { readonly type: 'ready'; readonly name: string }
  | { readonly type: 'finished'; readonly ids: readonly string[] }
  | { readonly type: 'watching'; readonly instance: string }
  | { readonly type: 'resync' };

/** A decoded notification: its sender (absent from a store's own `'*'`) and its messages. */
export interface WakeupNotification {
  readonly from: string | undefined;
  readonly messages: readonly WakeupMessage[];
}

const FROM = 'from:';
const FINISHED = 'finished:';
const WATCHING = 'watching:';
const RESYNC = '*';

/** Ids per `finished` part. */
const FINISHED_IDS_PER_PART = 100;

function encodeMessage(message: WakeupMessage): string[] {
  switch (message.type) {
    case 'ready':
      return [message.name];
    case 'watching':
      return [`${WATCHING}${message.instance}`];
    case 'resync':
      return [RESYNC];
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
  if (part.startsWith(FINISHED)) return { type: 'finished', ids: part.slice(FINISHED.length).split(',') };
  if (part.startsWith(WATCHING)) return { type: 'watching', instance: part.slice(WATCHING.length) };
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
