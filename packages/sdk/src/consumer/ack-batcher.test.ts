import { describe, expect, it } from 'vitest';
import type { QueueApi } from '../transport.ts';
import { AckBatcher } from './ack-batcher.ts';

type CompleteInput = { items: { id: string; leaseToken: string }[] };
type Outcome = { id: string; ok: boolean };

/**
 * A batcher whose `consumer.complete` requests are answered by `answer`, as the server answers: one outcome per
 * item, in order. Resolves each completion to whether it was settled ok.
 */
function batcherAnswering(answer: (input: CompleteInput) => Outcome[]) {
  const sent: CompleteInput[] = [];
  const api = {
    consumer: {
      complete: {
        mutate: async (input: CompleteInput) => {
          sent.push(input);
          return answer(input);
        },
      },
    },
  } as unknown as QueueApi;
  const batcher = new AckBatcher((run) => run(api, new AbortController().signal), 10);
  const complete = (id: string, leaseToken: string) => batcher.complete(id, leaseToken, null, Date.now() + 60_000);
  return { batcher, complete, sent };
}

describe('AckBatcher', () => {
  it('settles each lease of a batch by its own outcome, also when two leases of one job go out together', async () => {
    // The job's lease `stale` expired while this worker ran it; it was claimed again under `fresh`.
    const { complete, sent } = batcherAnswering((input) =>
      input.items.map(({ id, leaseToken }) => ({ id, ok: leaseToken !== 'stale' })),
    );
    const settled = await Promise.all([complete('job-1', 'stale'), complete('job-1', 'fresh'), complete('job-2', 'a')]);
    expect(settled).toEqual([false, true, true]);
    expect(sent).toHaveLength(1);
  });

  it('lets a claim carry one lease of a job: the other goes out on its own', async () => {
    const { batcher, complete, sent } = batcherAnswering((input) =>
      input.items.map(({ id, leaseToken }) => ({ id, ok: leaseToken !== 'stale' })),
    );
    const stale = complete('job-1', 'stale');
    const fresh = complete('job-1', 'fresh');
    const other = complete('job-2', 'a');
    const carried = batcher.take();
    expect(carried.map(({ id, leaseToken }) => [id, leaseToken])).toEqual([
      ['job-1', 'stale'],
      ['job-2', 'a'],
    ]);
    // The claim's answer names job-1 as not completed: its carried lease was lost.
    batcher.settle(carried, ['job-2']);
    expect(await Promise.all([stale, other])).toEqual([false, true]);
    expect(await fresh).toBe(true);
    expect(sent.map((input) => input.items.map(({ leaseToken }) => leaseToken))).toEqual([['fresh']]);
  });
});
