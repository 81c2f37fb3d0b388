import { describe, expect, it } from 'vitest';
import { type RequestRecord, runInRequest } from './request-context.ts';
import { StoreTurns } from './store-turns.ts';

const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** A request record of the caller with key `callerKey` (`undefined`: open mode). */
const requestOf = (callerKey: string | undefined): RequestRecord => ({
  id: `request-${callerKey}`,
  method: 'POST',
  path: '/trpc/jobs.get',
  remoteAddress: '127.0.0.1',
  failures: [],
  logger,
  ...(callerKey === undefined ? {} : { callerKey }),
});

/** Store calls that each end when told, recording the order they started in. */
function storeCalls() {
  const started: string[] = [];
  const ends = new Map<string, () => void>();
  const call =
    (label: string, fails = false) =>
    () => {
      started.push(label);
      return new Promise<string>((resolve, reject) => {
        ends.set(label, () => (fails ? reject(new Error(label)) : resolve(label)));
      });
    };
  const end = async (label: string) => {
    ends.get(label)?.();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { started, call, end };
}

describe('StoreTurns', () => {
  it('refuses a capacity that is not a positive integer (VALIDATION)', () => {
    for (const capacity of [0, 1.5, Number.NaN]) {
      expect(() => new StoreTurns(capacity)).toThrow(
        expect.objectContaining({ code: 'VALIDATION', message: expect.stringContaining('maxStoreCallsInFlight') }),
      );
    }
  });

  it("runs a caller's call after at most one call of each other caller waiting, however many a caller sent", async () => {
    const turns = new StoreTurns(2);
    const { started, call, end } = storeCalls();
    const flood = requestOf('flood');
    const answers = ['f1', 'f2', 'f3', 'f4', 'f5', 'f6'].map((label) =>
      runInRequest(flood, () => turns.run(call(label))),
    );
    const other = runInRequest(requestOf('other'), () => turns.run(call('o1')));
    const open = runInRequest(requestOf(undefined), () => turns.run(call('open1')));
    expect(started).toEqual(['f1', 'f2']);
    expect(turns.waiting).toBe(6);

    await end('f1');
    await end('f2');
    // The round: the flood's next call, then the other caller's, then open mode's.
    expect(started).toEqual(['f1', 'f2', 'f3', 'o1']);
    await end('f3');
    expect(started.at(-1)).toBe('open1');
    for (const label of ['o1', 'open1', 'f4', 'f5', 'f6']) await end(label);
    expect(await Promise.all([...answers, other, open])).toEqual(['f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'o1', 'open1']);
    expect(turns.running).toBe(0);
    expect(turns.waiting).toBe(0);
  });

  it('gives the turn back when a call fails, and never holds up calls made outside any request', async () => {
    const turns = new StoreTurns(1);
    const { started, call, end } = storeCalls();
    const caller = requestOf('a');
    const failing = runInRequest(caller, () => turns.run(call('a1', true)));
    const next = runInRequest(caller, () => turns.run(call('a2')));
    const upkeep = turns.run(call('sweep'));
    expect(started).toEqual(['a1', 'sweep']);
    await end('sweep');
    expect(await upkeep).toBe('sweep');
    const failed = expect(failing).rejects.toThrow('a1');
    await end('a1');
    await failed;
    expect(started).toEqual(['a1', 'sweep', 'a2']);
    await end('a2');
    expect(await next).toBe('a2');
    expect(turns.running).toBe(0);
  });
});
