import { describe, expect, it } from 'vitest';
import type { JobEvent } from '../events.ts';
import { type EventBatch, EventHub } from './event-hub.ts';

const readJob = async () => undefined;

function event(id: string, name = 'mail'): JobEvent {
  return { type: 'enqueued', id, name, version: 1, at: new Date() };
}

/** Reads the next batch of `batches` (the first one is the greeting, which carries the id to resume from). */
async function next(batches: AsyncIterator<EventBatch>): Promise<EventBatch> {
  const { value, done } = await batches.next();
  if (done) throw new Error('the stream ended');
  return value;
}

function ids(batch: EventBatch): string[] {
  return batch.events.map((e) => (e.type === 'resync' ? 'resync' : e.id));
}

describe('the event hub', () => {
  it('builds events only while someone listens, and gives each subscriber only the names it wants', async () => {
    const hub = new EventHub({ readJob });
    expect(hub.listening).toBe(false);
    const controller = new AbortController();
    const batches = hub
      .subscribe({ wants: (name) => name === 'mail', signal: controller.signal })
      [Symbol.asyncIterator]();
    expect(hub.listening).toBe(true);
    expect((await next(batches)).events).toEqual([]);
    hub.publish([event('a'), event('b', 'report'), event('c')]);
    expect(ids(await next(batches))).toEqual(['a', 'c']);
    controller.abort();
    expect((await batches.next()).done).toBe(true);
    hub.close();
  });

  it('drops what a subscriber has not read past its buffer, and tells it with resync', async () => {
    const hub = new EventHub({ readJob, maxBufferedEvents: 3 });
    const controller = new AbortController();
    const batches = hub.subscribe({ wants: () => true, signal: controller.signal })[Symbol.asyncIterator]();
    await next(batches);
    hub.publish(['1', '2', '3', '4', '5'].map((id) => event(id)));
    hub.publish([event('6')]);
    // The fourth overflowed: the three before it are dropped, the events after it kept.
    expect(ids(await next(batches))).toEqual(['resync', '5', '6']);
    controller.abort();
    hub.close();
  });

  it('resumes a subscriber after its last batch, and resyncs one whose id it cannot resume', async () => {
    const hub = new EventHub({ readJob });
    const first = new AbortController();
    const batches = hub.subscribe({ wants: () => true, signal: first.signal })[Symbol.asyncIterator]();
    await next(batches);
    hub.publish([event('a')]);
    const { id } = await next(batches);
    first.abort();
    hub.publish([event('b'), event('c')]);

    const again = new AbortController();
    const resumed = hub.subscribe({ wants: () => true, lastEventId: id, signal: again.signal })[Symbol.asyncIterator]();
    expect(ids(await next(resumed))).toEqual(['b', 'c']);

    const other = new AbortController();
    const foreign = hub
      .subscribe({ wants: () => true, lastEventId: 'another-server:5', signal: other.signal })
      [Symbol.asyncIterator]();
    expect(ids(await next(foreign))).toEqual(['resync']);
    again.abort();
    other.abort();
    hub.close();
  });

  it('ends its streams with a retryable UNAVAILABLE when it closes, so subscribers reconnect', async () => {
    const hub = new EventHub({ readJob });
    const batches = hub.subscribe({ wants: () => true, signal: new AbortController().signal })[Symbol.asyncIterator]();
    await next(batches);
    hub.close();
    await expect(batches.next()).rejects.toMatchObject({ code: 'UNAVAILABLE', retryable: true });
  });
});
