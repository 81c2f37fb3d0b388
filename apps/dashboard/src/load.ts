import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { useLive } from './live.ts';

/** How soon a failed read is tried again. */
const RETRY_EVERY_MS = 3_000;

/** A value read from the server: reloaded when `keys` change and on live changes. */
export interface Loaded<T> {
  /** The last value read; kept while a later read fails, so an outage does not blank the page. */
  data: T | undefined;
  /** What the last read's failure says, in words a person can act on; `undefined` after a success. */
  error: string | undefined;
  /** The last read failed because the server or its store could not be reached, not because it refused. */
  outage: boolean;
  loading: boolean;
}

/**
 * Runs `load` now, again when `keys` change, and on the live feed's
 * changes: every throttled change (`tick`), or, for a page that patches what
 * it shows from the events (`patched`), only when those may have been missed
 * (`staleTick`); and every `RETRY_EVERY_MS` while the last read failed.
 * A slower earlier answer never overwrites a later one.
 */
export function useLoad<T>(load: () => Promise<T>, keys: readonly unknown[], patched = false): Loaded<T> {
  const live = useLive();
  const [state, setState] = useState<Loaded<T>>({ data: undefined, error: undefined, outage: false, loading: true });
  const sequence = useRef(0);
  const keyText = JSON.stringify(keys);
  // A failed read is tried again on its own, whatever the live feed does: an outage ends without an event.
  const [retry, setRetry] = useState(0);
  useEffect(() => {
    if (!state.error) return;
    const timer = setTimeout(() => setRetry((n) => n + 1), RETRY_EVERY_MS);
    return () => clearTimeout(timer);
  }, [state.error, retry]);
  useEffect(() => {
    const mine = ++sequence.current;
    load().then(
      (data) => mine === sequence.current && setState({ data, error: undefined, outage: false, loading: false }),
      (error: unknown) => {
        if (mine !== sequence.current) return;
        const { message, outage } = describeError(error);
        setState((before) => ({ ...before, error: message, outage, loading: false }));
      },
    );
  }, [keyText, patched ? live.staleTick : live.tick, retry]);
  return state;
}
