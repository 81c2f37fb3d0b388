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

/** One run of `completed` events for `ids`, each carrying a result of about `resultBytes`. */
function completedRun(ids: string[], resultBytes: number): JobEventRun {
  const details = ids.map((id) => ({ result: { id, blob: 'x'.repeat(resultBytes) } }));
  return { type: 'completed', name: 'mail', at: new Date(), ids, versions: ids.map(() => 1), details };
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

  it('counts the bytes of what a subscriber has not read too: results past maxBufferedBytes make it resync', async () => {
    const hub = new EventHub({ readJob, maxBufferedBytes: 250_000 });
    const { batches, leave } = subscribeToAll(hub);
    await next(batches);
    // Three results of 100 KB pass 250 KB; the same count of small ones does not.
    hub.publish([completedRun(['s1', 's2', 's3'], 10)]);
    expect(ids(await next(batches))).toEqual(['s1', 's2', 's3']);
    hub.publish([completedRun(['1'], 100_000), completedRun(['2'], 100_000), completedRun(['3'], 100_000)]);
    hub.publish([completedRun(['4'], 10)]);
    // The third overflowed: it and the runs before it are dropped, the run after it kept.
    expect(ids(await next(batches))).toEqual(['resync', '4']);
    // A single run over the bound still reaches a subscriber that has read everything.
    hub.publish([completedRun(['big'], 300_000)]);
    expect(ids(await next(batches))).toEqual(['big']);
    leave();
    hub.close();
  });

  it('keeps recent events for resuming within resumeBytes: past it, a reconnect from an old id resyncs', async () => {
    const resumeFrom = async (resultBytes: number) => {
      const hub = new EventHub({ readJob, resumeBytes: 1_000_000 });
      const first = subscribeToAll(hub);
      await next(first.batches);
      hub.publish([completedRun(['a'], 10)]);
      const { id } = await next(first.batches);
      first.leave();
      // Twenty results: 20 × 100 KB is twice the bound, 20 × 1 KB well within it.
      for (let n = 0; n < 20; n++) hub.publish([completedRun([`r${n}`], resultBytes)]);
      const resumed = subscribeToAll(hub, id);
      const batch = ids(await next(resumed.batches));
      resumed.leave();
      hub.close();
      return batch;
    };
    expect(await resumeFrom(1_000)).toEqual(Array.from({ length: 20 }, (_, n) => `r${n}`));
    expect(await resumeFrom(100_000)).toEqual(['resync']);
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
