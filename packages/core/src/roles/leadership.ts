/**
 * Leadership: one holder per role at a time, among the servers that share a
 * store. A holder takes a role by a lease it renews; when it stops renewing
 * (it died, or lost its store connection), the lease runs out and another
 * server takes the role. Leases are kept in the store itself (a row, or a
 * document), so leadership needs nothing beside the store, and every store
 * keeps it the same way.
 *
 * Times come from the caller's clock, as for every store operation: servers
 * whose clocks disagree by more than a small part of `ttlMs` may overlap by
 * that much. The roles run under it are written to stay correct when two
 * servers run them at once, briefly (sweeps and prunes lock what they
 * change; cron occurrences carry idempotency keys); leadership keeps that
 * rare, and their cost to one server.
 */
export interface LeaderElection {
  /**
   * Takes `role` for `holder` until `now + ttlMs` when no other holder's
   * lease on it is unexpired at `now`, or renews it when `holder` has it.
   * Atomic: for overlapping terms, at most one holder is answered `true`.
   * Resolves to whether `holder` leads `role` now.
   */
  tryLead(role: string, holder: string, now: Date, ttlMs: number): Promise<boolean>;
  /** Gives `role` up, if `holder` has it, so that another server takes it at once instead of after the lease. */
  resign(role: string, holder: string): Promise<void>;
}
