import { describe, expect, it } from 'vitest';
import { eventsOfRun, type JobEventRun } from '../events.ts';
import { type EventBatch, EventHub } from './event-hub.ts';

const readJob = async () => undefined;

/** One run of `enqueued` events for `ids`. */
function run(ids: string[], name = 'mail'): JobEventRun {
  return { type: 'enqueued', name, at: new Date(), ids, versions: ids.map(() => 1) };
}

/** Reads the next batch of `batches` (the first one is the greeting, which carries the id to resume from). */
async function next(batches: AsyncIterator<EventBatch>): Promise<EventBatch> {
  const { value, done } = await batches.next();
  if (done) throw new Error('the stream ended');
  return value;
}

/** Subscribes to every name, resuming after `lastEventId` when given: the batches, and `leave` to unsubscribe. */
function subscribeToAll(hub: EventHub, lastEventId?: string) {
  const controller = new AbortController();
  const batches = hub.subscribe({ wants: () => true, lastEventId, signal: controller.signal })[Symbol.asyncIterator]();
  return { batches, leave: () => controller.abort() };
}

function ids(batch: EventBatch): string[] {
  return batch.runs.flatMap((r) => (r.type === 'resync' ? ['resync'] : eventsOfRun(r).map((e) => e.id)));
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
    expect((await next(batches)).runs).toEqual([]);
    hub.publish([run(['a']), run(['b'], 'report'), run(['c'])]);
    expect(ids(await next(batches))).toEqual(['a', 'c']);
    controller.abort();
    expect((await batches.next()).done).toBe(true);
    hub.close();
  });

  it('drops what a subscriber has not read past its buffer, and tells it with resync', async () => {
    const hub = new EventHub({ readJob, maxBufferedEvents: 3 });
    const { batches, leave } = subscribeToAll(hub);
    await next(batches);
    hub.publish([run(['1', '2']), run(['3', '4']), run(['5'])]);
    hub.publish([run(['6'])]);
    // The second run overflowed: it and the run before it are dropped, the runs after it kept.
    expect(ids(await next(batches))).toEqual(['resync', '5', '6']);
    leave();
    hub.close();
  });

  it('resumes a subscriber after its last batch, and resyncs one whose id it cannot resume', async () => {
    const hub = new EventHub({ readJob });
    const first = subscribeToAll(hub);
    await next(first.batches);
    hub.publish([run(['a'])]);
    const { id } = await next(first.batches);
    first.leave();
    hub.publish([run(['b', 'c'])]);

    const resumed = subscribeToAll(hub, id);
    expect(ids(await next(resumed.batches))).toEqual(['b', 'c']);

    const foreign = subscribeToAll(hub, 'another-server:5');
    expect(ids(await next(foreign.batches))).toEqual(['resync']);
    resumed.leave();
    foreign.leave();
    hub.close();
  });

  it('resumes within a run when the id points into one', async () => {
    const hub = new EventHub({ readJob });
    const first = subscribeToAll(hub);
    await next(first.batches);
    hub.publish([run(['a', 'b', 'c'])]);
    const { id } = await next(first.batches);
    first.leave();
    const seq = Number(id.slice(id.lastIndexOf(':') + 1));
    const afterA = `${id.slice(0, id.lastIndexOf(':'))}:${seq - 2}`;
    const resumed = subscribeToAll(hub, afterA);
    expect(ids(await next(resumed.batches))).toEqual(['b', 'c']);
    resumed.leave();
    hub.close();
  });

  it('ends its streams with a retryable UNAVAILABLE when it closes, so subscribers reconnect', async () => {
    const hub = new EventHub({ readJob });
    const { batches } = subscribeToAll(hub);
    await next(batches);
    hub.close();
    await expect(batches.next()).rejects.toMatchObject({ code: 'UNAVAILABLE', retryable: true });
  });
});
