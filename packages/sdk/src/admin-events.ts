import { decodeEventBatch, type JobEvent, type ResyncEvent, WorkqError } from '@workq/core';
import { toWorkqError } from './errors.ts';
import type { QueueApi } from './transport.ts';

/**
 * One subscription to the server's job events, of one job type or of every type the token may see, read
 * without a catalog: each event as the server sent it (a result unparsed). It is not resumed: the iteration
 * returns when `signal` aborts, and fails with the server's `WorkqError` when the stream is refused or ends
 * with an error, or with `UNAVAILABLE` when the server ends it (as it does shutting down). Yields what arrived
 * since its last step, as one array (`oneByOne` hands the events out).
 */
export async function* watchEventsOnce(
  api: QueueApi,
  name: string | undefined,
  signal: AbortSignal | undefined,
): AsyncGenerator<(JobEvent | ResyncEvent)[], void> {
  const buffer: (JobEvent | ResyncEvent)[] = [];
  let outcome: WorkqError | 'ended' | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const subscription = api.events.watch.subscribe(
    { name },
    {
      onData: ({ data }) => {
        buffer.push(...decodeEventBatch(data));
        notify();
      },
      onError: (error) => {
        outcome = toWorkqError(error);
        notify();
      },
      onComplete: () => {
        outcome ??= 'ended';
        notify();
      },
      // The link would reconnect on its own after the connection failed or the server went away (a retryable
      // error): this stream is not resumed, so that ends it.
      onConnectionStateChange: (state) => {
        if (state.state !== 'connecting' || !state.error) return;
        outcome ??= toWorkqError(state.error);
        notify();
      },
    },
  );
  signal?.addEventListener('abort', notify);
  try {
    while (!signal?.aborted) {
      if (buffer.length > 0) {
        yield buffer.splice(0);
        continue;
      }
      // Set by the subscription's callbacks, which the compiler does not follow.
      const ended = outcome as WorkqError | 'ended' | undefined;
      if (ended instanceof WorkqError) throw ended;
      if (ended === 'ended') throw new WorkqError('UNAVAILABLE', 'The queue server ended the event stream.');
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    signal?.removeEventListener('abort', notify);
    subscription.unsubscribe();
  }
}
