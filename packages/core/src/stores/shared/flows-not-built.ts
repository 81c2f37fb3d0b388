import type { FlowStore } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';

/**
 * `FlowStore` for a store whose flows are not built yet: every operation rejects with `UNAVAILABLE`, not
 * retryable, saying so, and stores nothing. The conformance suite's flow tests fail on such a store.
 */
export function flowsNotBuilt(kind: string): FlowStore {
  const refuse = () =>
    Promise.reject(
      new WorkqError('UNAVAILABLE', `Flows (jobs with children) are not built on the ${kind} store yet.`, {
        retryable: false,
      }),
    );
  return {
    insertFlow: refuse,
    waitForChildren: refuse,
    listChildren: refuse,
    listChildStates: refuse,
    listHeldChildren: refuse,
    onParentsReady: () => () => undefined,
  };
}
