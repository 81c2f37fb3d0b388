import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { useLive } from './live.ts';

/** A value read from the server: reloaded when `keys` change and on every live change. */
export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
}

/**
 * Runs `load` now, again when `keys` change, and on every change the live
 * feed reports. A slower earlier answer never overwrites a later one.
 */
export function useLoad<T>(load: () => Promise<T>, keys: readonly unknown[]): Loaded<T> {
  const live = useLive();
  const [state, setState] = useState<Loaded<T>>({ data: undefined, error: undefined, loading: true });
  const sequence = useRef(0);
  const keyText = JSON.stringify(keys);
  useEffect(() => {
    const mine = ++sequence.current;
    load().then(
      (data) => mine === sequence.current && setState({ data, error: undefined, loading: false }),
      (error: unknown) =>
        mine === sequence.current &&
        setState((before) => ({ ...before, error: describeError(error).message, loading: false })),
    );
  }, [keyText, live.tick]);
  return state;
}
