import { WorkqError } from '@workq/core';
import { describe, expect, it } from 'vitest';
import type { QueueApi } from '../transport.ts';
import { AckBatcher, type PendingAck } from './ack-batcher.ts';

type CompleteInput = { items: { id: string; leaseToken: string }[] };
type Outcome = { id: string; ok: boolean };

/**
 * A batcher whose `consumer.complete` requests are answered by `answer`, as the server answers: one outcome per
 * item, in order. `lost` lists the leases the batcher said were lost, as `id/leaseToken`.
 */
function batcherAnswering(answer: (input: CompleteInput) => Outcome[]) {
  const sent: CompleteInput[] = [];
  const lost: string[] = [];
  const failed: [string, unknown][] = [];
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
  const outcomes = {
    lost: (ack: PendingAck) => lost.push(`${ack.id}/${ack.leaseToken}`),
    failed: (ack: PendingAck, error: unknown) => failed.push([ack.id, error]),
  };
  const batcher = new AckBatcher((run) => run(api, new AbortController().signal), 10, outcomes);
  const complete = (id: string, leaseToken: string) => batcher.complete(id, leaseToken, null, Date.now() + 60_000);
  return { batcher, complete, sent, lost, failed };
}

describe('AckBatcher', () => {
  it('settles each lease of a batch by its own outcome, also when two leases of one job go out together', async () => {
    // The job's lease `stale` expired while this worker ran it; it was claimed again under `fresh`.
    const { batcher, complete, sent, lost } = batcherAnswering((input) =>
      input.items.map(({ id, leaseToken }) => ({ id, ok: leaseToken !== 'stale' })),
    );
    complete('job-1', 'stale');
    complete('job-1', 'fresh');
    complete('job-2', 'a');
    await batcher.drain();
    expect(lost).toEqual(['job-1/stale']);
    expect(sent).toHaveLength(1);
  });

  it('lets a claim carry one lease of a job: the other goes out on its own', async () => {
    const { batcher, complete, sent, lost } = batcherAnswering((input) =>
      input.items.map(({ id, leaseToken }) => ({ id, ok: leaseToken !== 'stale' })),
    );
    complete('job-1', 'stale');
    complete('job-1', 'fresh');
    complete('job-2', 'a');
    const carried = batcher.take();
    expect(carried.map(({ id, leaseToken }) => [id, leaseToken])).toEqual([
      ['job-1', 'stale'],
      ['job-2', 'a'],
    ]);
    // The claim's answer names job-1 as not completed: its carried lease was lost.
    batcher.settle(carried, ['job-2']);
    await batcher.drain();
    expect(lost).toEqual(['job-1/stale']);
    expect(sent.map((input) => input.items.map(({ leaseToken }) => leaseToken))).toEqual([['fresh']]);
  });

  it('tells of every completion of a batch the server refused, with the refusal', async () => {
    const refusal = new WorkqError('VALIDATION', 'The batch was refused.');
    const { batcher, complete, lost, failed } = batcherAnswering(() => {
      throw refusal;
    });
    complete('job-1', 'a');
    complete('job-2', 'b');
    await batcher.drain();
    expect(failed).toEqual([
      ['job-1', refusal],
      ['job-2', refusal],
    ]);
    expect(lost).toEqual([]);
  });
});
