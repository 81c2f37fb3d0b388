/**
 * The values of `batches` one at a time: an event stream's events, from a generator that yields what arrived
 * as one array. A value already received is handed out in a promise made resolved, with no step of the
 * generator: a busy queue's subscriber reads thousands a second, and a generator's `yield` costs several
 * promise turns per value where this costs one. Calls of `next` that overlap share one step of the generator,
 * so none skips what another received; `return` ends the generator (its subscription with it).
 */
export function oneByOne<T>(batches: AsyncGenerator<T[], void>): AsyncIterator<T> {
  let batch: T[] = [];
  let next = 0;
  let finished = false;
  let stepping: Promise<void> | undefined;
  const step = (): Promise<void> => {
    stepping ??= batches.next().then(
      (result) => {
        stepping = undefined;
        if (result.done) finished = true;
        else {
          batch = result.value;
          next = 0;
        }
      },
      (error: unknown) => {
        stepping = undefined;
        finished = true;
        throw error;
      },
    );
    return stepping;
  };
  const iterator: AsyncIterator<T> = {
    next: () => {
      if (next < batch.length) {
        const value = batch[next] as T;
        next += 1;
        return Promise.resolve({ value, done: false });
      }
      if (finished) return Promise.resolve({ value: undefined, done: true });
      return step().then(() => iterator.next());
    },
    return: () => {
      finished = true;
      batch = [];
      return batches.return().then(() => ({ value: undefined, done: true }));
    },
  };
  return iterator;
}
