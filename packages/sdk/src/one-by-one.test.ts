import { describe, expect, it } from 'vitest';
import { oneByOne } from './one-by-one.ts';

/** A generator of arrays the test releases one at a time; `ended` once its `finally` ran. */
function releasedBatches() {
  const waiting: ((batch: string[]) => void)[] = [];
  const state = { steps: 0, ended: false };
  const batches = (async function* () {
    try {
      for (;;) {
        state.steps += 1;
        yield await new Promise<string[]>((resolve) => waiting.push(resolve));
      }
    } finally {
      state.ended = true;
    }
  })();
  const release = async (batch: string[]) => {
    while (waiting.length === 0) await new Promise((resolve) => setImmediate(resolve));
    waiting.shift()?.(batch);
  };
  return { batches, release, state };
}

describe('oneByOne', () => {
  it('hands out every value once and in order to calls of next that overlap, across batches', async () => {
    const { batches, release } = releasedBatches();
    const values = oneByOne(batches);
    const waiting = [values.next(), values.next(), values.next()];
    await release(['a', 'b']);
    await release(['c', 'd']);
    const later = values.next();
    expect((await Promise.all(waiting)).map((step) => step.value)).toEqual(['a', 'b', 'c']);
    expect((await later).value).toBe('d');
  });

  it('hands out a batch without stepping the generator again, then steps it once for the next', async () => {
    const { batches, release, state } = releasedBatches();
    const values = oneByOne(batches);
    const first = values.next();
    await release(['a', 'b', 'c']);
    await first;
    expect([(await values.next()).value, (await values.next()).value]).toEqual(['b', 'c']);
    expect(state.steps).toBe(1);
    const fourth = values.next();
    await release(['d']);
    expect((await fourth).value).toBe('d');
    expect(state.steps).toBe(2);
  });

  it('ends the generator when the loop leaves in the middle of a batch, and is done after', async () => {
    const { batches, release, state } = releasedBatches();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const value of { [Symbol.asyncIterator]: () => oneByOne(batches) }) {
        seen.push(value);
        if (seen.length === 2) break;
      }
    })();
    await release(['a', 'b', 'c']);
    await reading;
    expect(seen).toEqual(['a', 'b']);
    expect(state.ended).toBe(true);
  });

  it('passes on what the generator throws, and is done after', async () => {
    const failing = (async function* (): AsyncGenerator<string[], void> {
      yield ['a'];
      throw new Error('stream refused');
    })();
    const values = oneByOne(failing);
    expect((await values.next()).value).toBe('a');
    await expect(values.next()).rejects.toThrow('stream refused');
    expect(await values.next()).toEqual({ value: undefined, done: true });
  });
});
