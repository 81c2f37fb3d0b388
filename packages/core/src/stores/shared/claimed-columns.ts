/**
 * The jobs-table columns a claim reads of each job it leases, named alike by the PostgreSQL and MariaDB
 * stores: no more than a worker is handed (`ClaimedRecord`), less what the claim request already says (the
 * name, the lease token and its expiry).
 */
export const CLAIMED_JOB_COLUMNS = [
  'id',
  'version',
  'payload',
  'attempts',
  'max_attempts',
  'lease_ms',
  'timeout_ms',
  'progress',
  'run_at',
  'trace_context',
] as const;
