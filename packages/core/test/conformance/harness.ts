import type { Store } from '../../src/engine/store.ts';

/** How the conformance suite reaches one kind of store. */
export interface StoreHarness {
  /**
   * Opens a store on this harness's database. Every store opened from one
   * harness sees the same jobs; where `separateConnections` is true, each has
   * its own connections (pool), as separate processes would.
   */
  open(): Promise<Store>;
  /** Drops what the harness created (schema, database) and closes what it opened. */
  close(): Promise<void>;
  separateConnections: boolean;
  /** Set when the history-scale test cannot be meaningful on this store; printed as the skip reason. */
  scaleSkipReason?: string;
}
