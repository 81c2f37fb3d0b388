import { defineCatalog, defineJob, encodeEventBatch, type WireEventBatch } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEvents } from './events.ts';
import { nextTurn } from './next-turn.ts';
import type { QueueApi } from './transport.ts';

const jobs = defineCatalog({ noop: defineJob({ version: 1, payload: z.object({ n: z.number() }) }) });

/** A batch of `enqueued` events of `noop`, one per id. */
function enqueuedBatch(ids: string[]): WireEventBatch {
  return encodeEventBatch([{ type: 'enqueued', name: 'noop', at: new Date(), ids, versions: ids.map(() => 1) }]);
}

/** A stand-in for the tRPC client's event stream: the test sends its batches, and sees it unsubscribed. */
function streamApi() {
  let onData: ((data: { id: string; data: WireEventBatch }) => void) | undefined;
  let sent = 0;
  const stream = { subscribed: 0, unsubscribed: 0 };
  const api = {
    events: {
      watch: {
        subscribe: (_input: unknown, callbacks: { onData: typeof onData }) => {
          stream.subscribed += 1;
          onData = callbacks.onData;
          return { unsubscribe: () => (stream.unsubscribed += 1) };
        },
      },
    },
  } as unknown as QueueApi;
  const send = (ids: string[]) => onData?.({ id: String(++sent), data: enqueuedBatch(ids) });
  return { api, send, stream };
}

/** Once the current turn's continuations have run. */
const turn = () => new Promise<void>((resolve) => nextTurn(resolve));
describe('sdk.events', () => {
  it('ends its subscription when the loop leaves in the middle of a batch', async () => {
    const { api, send, stream } = streamApi();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of createEvents(jobs, api)('noop')) {
        seen.push((event as { id: string }).id);
        if (seen.length === 2) break;
      }
    })();
    await turn();
    send(['a', 'b', 'c']);
    await reading;
    expect(seen).toEqual(['a', 'b']);
    expect(stream).toEqual({ subscribed: 1, unsubscribed: 1 });
  });
});
