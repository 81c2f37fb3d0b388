import { describe, expect, it } from 'vitest';
import {
  type BusJobEvent,
  decodeWakeups,
  encodeWakeups,
  MAX_EVENT_PART_CHARS,
  type WakeupMessage,
} from './messages.ts';

describe('the wake-up codec', () => {
  it('round-trips every kind of message, with its sender', () => {
    const messages: WakeupMessage[] = [
      { type: 'ready', name: 'imageConvert' },
      { type: 'ready', name: 'sendEmail' },
      { type: 'watching', instance: 'i-2' },
      { type: 'finished', ids: ['a', 'b'] },
      { type: 'cancelled', id: 'job-1', workerId: 'host:1\nworker' },
      { type: 'cancelled', id: 'job-2', workerId: null },
      { type: 'schedules' },
      { type: 'schemas', name: 'imageConvert' },
      { type: 'resync' },
    ];
    const [notification, ...more] = encodeWakeups('i-1', messages, 7_000);
    expect(more).toEqual([]);
    expect(decodeWakeups(notification as string)).toEqual({ from: 'i-1', messages });
  });

  it('speaks the format earlier servers speak, so both share a store in a rolling deploy', () => {
    const [text] = encodeWakeups(
      'i-1',
      [
        { type: 'ready', name: 'mail' },
        { type: 'finished', ids: ['x'] },
      ],
      7_000,
    );
    expect(text).toBe('from:i-1\nmail\nfinished:x');
    expect(decodeWakeups('from:old\nmail\nwatching:old\nfinished:1,2')).toEqual({
      from: 'old',
      messages: [
        { type: 'ready', name: 'mail' },
        { type: 'watching', instance: 'old' },
        { type: 'finished', ids: ['1', '2'] },
      ],
    });
  });

  it('says the stored schedules changed in a part no earlier server takes for a job it waits on', () => {
    const [text] = encodeWakeups('i-1', [{ type: 'schedules' }], 7_000);
    // An earlier server reads it as jobs of a type named `schedules:changed` being ready: no job name has a `:`.
    expect(text).toBe('from:i-1\nschedules:changed');
  });

  it('says a schema of a type was removed in a part no earlier server takes for a job it waits on', () => {
    const [text] = encodeWakeups('i-1', [{ type: 'schemas', name: 'imageConvert' }], 7_000);
    // An earlier server reads it as jobs of a type named `schemas:imageConvert` being ready: no job name has a `:`.
    expect(text).toBe('from:i-1\nschemas:imageConvert');
  });

  it("reads a store's own '*' (no sender) as a resync", () => {
    expect(decodeWakeups('*')).toEqual({ from: undefined, messages: [{ type: 'resync' }] });
  });

  it('splits what does not fit one notification, each under the byte limit and each naming its sender', () => {
    const ids = Array.from({ length: 1_000 }, (_, i) => `01890000-0000-7000-8000-${String(i).padStart(12, '0')}`);
    const notifications = encodeWakeups('i-1', [{ type: 'finished', ids }], 7_000);
    expect(notifications.length).toBeGreaterThan(5);
    for (const text of notifications) {
      expect(text.length).toBeLessThanOrEqual(7_000);
      expect(text.startsWith('from:i-1\n')).toBe(true);
    }
    const decoded = notifications.flatMap((text) => decodeWakeups(text).messages);
    expect(decoded.flatMap((m) => (m.type === 'finished' ? m.ids : []))).toEqual(ids);
  });

  it('carries job events with their results, as few ASCII characters as bytes', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    const events: BusJobEvent[] = [
      { type: 'completed', id: 'j1', name: 'imageConvert', version: 2, at, attempt: 1, result: { bytes: 5, when: at } },
      {
        type: 'failed',
        id: 'j2',
        name: 'sendEmail',
        version: 1,
        at,
        attempt: 3,
        error: { message: 'caf\u00e9 \u{1f600}' },
        willRetry: true,
      },
    ];
    const messages: WakeupMessage[] = [
      { type: 'listening', instance: 'i-2' },
      ...events.map((event) => ({ type: 'event' as const, event })),
      { type: 'eventsLost' },
    ];
    const [text, ...more] = encodeWakeups('i-1', messages, 7_000);
    expect(more).toEqual([]);
    expect(Buffer.byteLength(text as string)).toBe((text as string).length);
    expect(decodeWakeups(text as string)).toEqual({ from: 'i-1', messages });
  });

  it('sends an event too large for a notification without its result and error, marked for reading back', () => {
    const at = new Date();
    const large: BusJobEvent = {
      type: 'completed',
      id: 'j1',
      name: 'generateReport',
      version: 1,
      at,
      result: { url: 'x'.repeat(20_000) },
    };
    const notifications = encodeWakeups('i-1', [{ type: 'event', event: large }], 7_000);
    expect(notifications).toHaveLength(1);
    expect((notifications[0] as string).length).toBeLessThanOrEqual(MAX_EVENT_PART_CHARS + 'from:i-1\n'.length);
    const { result: _result, ...rest } = large;
    expect(decodeWakeups(notifications[0] as string).messages).toEqual([
      { type: 'event', event: { ...rest, omitted: true } },
    ]);
  });
});
