import { describe, expect, it } from 'vitest';
import { ENQUEUE_REQUESTS_IN_FLIGHT, EnqueueBatcher } from './enqueue-batcher.ts';
import { nextTurn } from './next-turn.ts';
import type { QueueApi } from './transport.ts';

/** A stand-in for the tRPC client that records each request and answers with sequential ids. */
function recordingApi(fail = false) {
  const requests: { path: string; count: number; options: unknown; keys?: unknown; ids?: unknown }[] = [];
  let next = 0;
  const api = {
    jobs: {
      enqueue: {
        mutate: async (input: { options: unknown }) => {
          requests.push({ path: 'enqueue', count: 1, options: input.options });
          if (fail) throw new Error('store unavailable');
          return { id: `job-${next++}`, created: true };
        },
      },
      enqueueMany: {
        mutate: async (input: { payloads: unknown[]; options: unknown; idempotencyKeys?: unknown; ids?: unknown }) => {
          const { payloads, options, idempotencyKeys, ids } = input;
          requests.push({
            path: 'enqueueMany',
            count: payloads.length,
            options,
            ...(idempotencyKeys ? { keys: idempotencyKeys } : {}),
            ...(ids ? { ids } : {}),
          });
          if (fail) throw new Error('store unavailable');
          return input.payloads.map(() => ({ id: `job-${next++}`, created: true }));
        },
      },
    },
  } as unknown as QueueApi;
  const call = <T>(run: (a: QueueApi, signal: AbortSignal) => Promise<T>) => run(api, new AbortController().signal);
  return { requests, batcher: new EnqueueBatcher(call) };
}

describe('EnqueueBatcher', () => {
  it('sends a lone enqueue at once, as a single request', async () => {
    const { requests, batcher } = recordingApi();
    await expect(batcher.enqueue('a', 1, { n: 1 }, {})).resolves.toEqual({ id: 'job-0', created: true });
    expect(requests).toEqual([{ path: 'enqueue', count: 1, options: {} }]);
  });

  it('batches the enqueues made together after the first, and hands each caller its own result', async () => {
    const { requests, batcher } = recordingApi();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, n) => batcher.enqueue('a', 1, { n }, { priority: 1 })),
    );
    expect(requests.map((r) => [r.path, r.count])).toEqual([
      ['enqueue', 1],
      ['enqueueMany', 9],
    ]);
    expect(new Set(results.map((r) => r.id)).size).toBe(10);
  });

  it('keeps different job types and options in separate requests', async () => {
    const { requests, batcher } = recordingApi();
    await Promise.all([
      batcher.enqueue('a', 1, {}, {}),
      batcher.enqueue('a', 1, {}, { priority: 1 }),
      batcher.enqueue('a', 1, {}, { priority: 1 }),
      batcher.enqueue('b', 1, {}, { priority: 1 }),
      batcher.enqueue('b', 1, {}, { priority: 1 }),
    ]);
    expect(requests.map((r) => [r.path, r.count, r.options])).toEqual([
      ['enqueue', 1, {}],
      ['enqueueMany', 2, { priority: 1 }],
      ['enqueueMany', 2, { priority: 1 }],
    ]);
  });

  it('rejects every caller of a failed request', async () => {
    const { batcher } = recordingApi(true);
    const outcomes = await Promise.allSettled([1, 2, 3].map((n) => batcher.enqueue('a', 1, { n }, {})));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
  });

  it('batches enqueues whose options differ only in their keys, sending each job’s key with it', async () => {
    const { requests, batcher } = recordingApi();
    await Promise.all([
      batcher.enqueue('a', 1, { n: 0 }, { priority: 1, idempotencyKey: 'k0' }),
      batcher.enqueue('a', 1, { n: 1 }, { priority: 1, idempotencyKey: 'k1' }),
      batcher.enqueue('a', 1, { n: 2 }, { priority: 1 }),
      batcher.enqueue('a', 1, { n: 3 }, { priority: 1, idempotencyKey: 'k3' }),
    ]);
    expect(requests).toEqual([
      { path: 'enqueue', count: 1, options: { priority: 1, idempotencyKey: 'k0' } },
      { path: 'enqueueMany', count: 3, options: { priority: 1 }, keys: ['k1', null, 'k3'] },
    ]);
  });

  it('batches enqueues whose options differ only in their ids, sending each job’s id with it', async () => {
    const { requests, batcher } = recordingApi();
    await Promise.all([
      batcher.enqueue('a', 1, { n: 0 }, { priority: 1, id: 'id-0' }),
      batcher.enqueue('a', 1, { n: 1 }, { priority: 1, id: 'id-1' }),
      batcher.enqueue('a', 1, { n: 2 }, { priority: 1 }),
      batcher.enqueue('a', 1, { n: 3 }, { priority: 1, id: 'id-3', idempotencyKey: 'k3' }),
    ]);
    expect(requests).toEqual([
      { path: 'enqueue', count: 1, options: { priority: 1, id: 'id-0' } },
      {
        path: 'enqueueMany',
        count: 3,
        options: { priority: 1 },
        keys: [null, null, 'k3'],
        ids: ['id-1', null, 'id-3'],
      },
    ]);
  });

  it('while its requests in flight are unanswered, holds later enqueues and sends them together when one is answered', async () => {
    const { requests, batcher, answerNext } = heldApi();
    const first = [];
    for (let n = 0; n < ENQUEUE_REQUESTS_IN_FLIGHT; n++) {
      first.push(batcher.enqueue('a', 1, { n }, {}));
      await turnEnds();
    }
    expect(requests.map((r) => r.path)).toEqual(Array(ENQUEUE_REQUESTS_IN_FLIGHT).fill('enqueue'));

    const later = [];
    for (let n = 0; n < 5; n++) {
      later.push(batcher.enqueue('a', 1, { n: 10 + n }, {}, 60_000));
      await turnEnds();
    }
    expect(requests).toHaveLength(ENQUEUE_REQUESTS_IN_FLIGHT);

    answerNext();
    await Promise.all(first.slice(0, 1));
    await turnEnds();
    expect(requests.slice(ENQUEUE_REQUESTS_IN_FLIGHT)).toMatchObject([{ path: 'enqueueMany', count: 5 }]);
    const waitedMs = 60_000 - (requests.at(-1)?.timeoutMs ?? 0);
    expect(waitedMs).toBeGreaterThanOrEqual(0);
    expect(waitedMs).toBeLessThan(10_000);

    while (answerNext());
    const outcomes = await Promise.all([...first, ...later]);
    expect(new Set(outcomes.map((o) => o.id)).size).toBe(ENQUEUE_REQUESTS_IN_FLIGHT + 5);
  });

  it('sends an enqueue at once again once its requests are answered', async () => {
    const { requests, batcher, answerNext } = heldApi();
    const outcomes = [batcher.enqueue('a', 1, { n: 0 }, {})];
    await turnEnds();
    outcomes.push(batcher.enqueue('a', 1, { n: 1 }, {}));
    expect(requests.map((r) => r.path)).toEqual(['enqueue', 'enqueue']);
    while (answerNext());
    await Promise.all(outcomes);
    await turnEnds();
    outcomes.push(batcher.enqueue('a', 1, { n: 2 }, {}));
    expect(requests.map((r) => r.path)).toEqual(['enqueue', 'enqueue', 'enqueue']);
    while (answerNext());
    await Promise.all(outcomes);
  });
});

/** Resolves after the current turn's end, when the batcher has sent what that turn held. */
const turnEnds = () => new Promise<void>((resolve) => nextTurn(() => nextTurn(resolve)));

/** A stand-in whose requests stay unanswered until `answerNext` answers the oldest; it records each one's time limit. */
function heldApi() {
  const requests: { path: string; count: number; timeoutMs: number | undefined }[] = [];
  const unanswered: (() => void)[] = [];
  let next = 0;
  let limit: number | undefined;
  const held = <T>(answer: () => T) => new Promise<T>((resolve) => unanswered.push(() => resolve(answer())));
  const api = {
    jobs: {
      enqueue: {
        mutate: () => {
          requests.push({ path: 'enqueue', count: 1, timeoutMs: limit });
          return held(() => ({ id: `job-${next++}`, created: true }));
        },
      },
      enqueueMany: {
        mutate: (input: { payloads: unknown[] }) => {
          requests.push({ path: 'enqueueMany', count: input.payloads.length, timeoutMs: limit });
          return held(() => input.payloads.map(() => ({ id: `job-${next++}`, created: true })));
        },
      },
    },
  } as unknown as QueueApi;
  const call = <T>(run: (a: QueueApi, signal: AbortSignal) => Promise<T>, options?: { timeoutMs?: number }) => {
    limit = options?.timeoutMs;
    return run(api, new AbortController().signal);
  };
  return {
    requests,
    batcher: new EnqueueBatcher(call),
    /** Answers the oldest unanswered request; false when none is left. */
    answerNext: () => {
      unanswered.shift()?.();
      return unanswered.length > 0;
    },
  };
}
