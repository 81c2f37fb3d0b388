import { defineCatalog, defineJob } from '@workq/core';
import { createClient } from '@workq/sdk';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { oneServerOnStore } from '../support/one-server.ts';
import { describeEachStore, IN_PROCESS_STORES } from '../support/stores.ts';

const jobs = defineCatalog({
  ledgerEntry: defineJob({
    version: 1,
    payload: z.object({
      accountId: z.bigint(),
      amountMinor: z.int64(),
      largestSafe: z.number(),
      huge: z.number(),
      tiny: z.number(),
      bookedAt: z.date(),
      memo: z.string(),
      tags: z.array(z.string()),
      nested: z.object({ levels: z.array(z.object({ depth: z.number(), children: z.array(z.unknown()) })) }),
    }),
    result: z.object({ balance: z.bigint(), memo: z.string() }),
  }),
});

type Entry = z.input<(typeof jobs)['ledgerEntry']['payload']>;

/** Text that trips up databases: astral emoji, combining marks, right-to-left, CJK, quotes and backslashes. */
const MEMO = 'Zahlung für Café ☕ — 👩🏽‍💻 e\u0301 עברית 中文 "quoted" \\back\\slash\' \t tab';

function entry(i: number): Entry {
  return {
    accountId: 9_007_199_254_740_993n + BigInt(i),
    amountMinor: -(2n ** 62n) + BigInt(i),
    largestSafe: Number.MAX_SAFE_INTEGER,
    huge: 1.7976931348623157e308,
    tiny: 5e-324,
    bookedAt: new Date(Date.UTC(2030, 0, 2, 3, 4, 5, i)),
    memo: `${MEMO} #${i}`,
    tags: ['ü', '🏷️', ''],
    nested: { levels: [{ depth: 1, children: [{ depth: 2, children: [[], {}, null, false, 0.1] }] }] },
  };
}

await describeEachStore(IN_PROCESS_STORES, 'payloads and results keep their types over $label', ({ open }) => {
  const server = oneServerOnStore(open, { pollIntervalMs: 200 });

  it('delivers bigints, dates, unicode and nested values exactly as enqueued, and returns a bigint result', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const received = new Map<string, unknown>();
    server.workers.push(
      sdk.consume('ledgerEntry', async (job) => {
        received.set(job.id, job.payload);
        return { balance: job.payload.accountId * 2n, memo: job.payload.memo };
      }),
    );
    const single = await sdk.enqueue.ledgerEntry(entry(0));
    const batch = await sdk.enqueueMany.ledgerEntry([entry(1), entry(2)]);
    const handles = [single, ...batch];

    const results = await Promise.all(handles.map((handle) => handle.result({ timeoutMs: 20_000 })));
    handles.forEach((handle, i) => {
      expect(received.get(handle.id)).toEqual(entry(i));
      expect(results[i]).toEqual({ balance: (9_007_199_254_740_993n + BigInt(i)) * 2n, memo: `${MEMO} #${i}` });
    });
    const payload = received.get(single.id) as Entry;
    expect(typeof payload.accountId).toBe('bigint');
    expect(payload.bookedAt).toBeInstanceOf(Date);
    expect((await single.status()).result).toEqual(results[0]);
  });
});
