import type { Store } from '@workq/core/engine';
import { defaultFetch } from '@workq/sdk';

/**
 * Per-round-trip timings for `--profile`: how long each store call (workq core)
 * or each HTTP request (SDK, by tRPC path) took, and how many items it carried.
 */
interface Timing {
  calls: number;
  totalMs: number;
  samples: number[];
}

const timings = new Map<string, Timing>();

export function recordRoundTrip(key: string, ms: number): void {
  let timing = timings.get(key);
  if (!timing) {
    timing = { calls: 0, totalMs: 0, samples: [] };
    timings.set(key, timing);
  }
  timing.calls++;
  timing.totalMs += ms;
  if (timing.samples.length < 50_000) timing.samples.push(ms);
}

export function roundTripTimings(): ReadonlyMap<string, Timing> {
  return timings;
}

/** The parts of a store whose methods are store calls too (a handoff's insert, a complete-and-claim). */
const TIMED_PARTS = new Set<PropertyKey>(['handoff', 'completeAndClaim']);

/**
 * The store, with every async method timed under `<prefix> store.<method>`, the methods of its handoff and
 * complete-and-claim parts included.
 */
export function timeStore(store: Store, prefix: string): Store {
  const timed = <T extends object>(on: T): T =>
    new Proxy(on, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (target === store && TIMED_PARTS.has(property) && typeof value === 'object' && value !== null) {
          return timed(value);
        }
        if (typeof value !== 'function' || typeof property !== 'string') return value;
        return (...args: unknown[]) => {
          const started = performance.now();
          const result = value.apply(target, args);
          if (result instanceof Promise) {
            return result.finally(() => recordRoundTrip(`${prefix} store.${property}`, performance.now() - started));
          }
          return result;
        };
      },
    });
  return timed(store);
}

/** The SDK's own fetch, timing each request under `<prefix> http <tRPC path(s)>`. */
export function timedFetch(prefix: string): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const path = new URL(url).pathname.replace(/^\/trpc\//, '');
    const paths = [...new Set(path.split(','))].join(',');
    const started = performance.now();
    // The SDK's Node fetch reads whole bodies; the event stream needs the platform's streaming fetch.
    const fetchImpl = paths === 'events.watch' ? fetch : (defaultFetch ?? fetch);
    try {
      return await fetchImpl(input, init);
    } finally {
      recordRoundTrip(`${prefix} http ${paths}`, performance.now() - started);
    }
  };
}
