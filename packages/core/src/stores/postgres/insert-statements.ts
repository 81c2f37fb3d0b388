import type { DebounceMode } from '../../jobs.ts';
import {
  JOB_COLUMNS,
  NEW_JOB_FIELDS,
  type NewJobField,
  PER_JOB_FIELDS,
  SETTINGS_FIELDS,
  type SettingsField,
} from './records.ts';
import { claimsHeldBackSql, NOT_STARTED_SQL, notStartedSql, orderKeySql } from './sql-fragments.ts';

/** The columns every insert of a job writes, in the order of `insertValues`. */
const INSERT_COLUMNS =
  'id, name, version, payload, state, priority, job_order, order_key, run_at, created_at, updated_at, attempts, max_attempts, backoff, lease_ms, progress, idempotency_key, replay_of, trace_context, idempotency_expires_at, job_group, idempotency_until_finished, retain_completed_ms, retain_dead_ms, timeout_ms';

/**
 * The SQL type of each new job field: its column's. Parameters carry these types (an array of `jsonb` values
 * excepted: see `arrayParam`), so PostgreSQL parses each value once, as it binds the statement. A text
 * parameter cast in the select list is parsed again for every row and every use (a batch's run time three
 * times a row): a prepared statement's generic plan folds no such cast, and `timestamptz` input, which
 * depends on the time zone, is never folded.
 */
const NEW_JOB_FIELD_TYPES: Record<NewJobField, string> = {
  id: 'text',
  payload: 'jsonb',
  idempotency_key: 'text',
  trace_context: 'jsonb',
  job_group: 'text',
  name: 'text',
  version: 'int',
  priority: 'int',
  job_order: 'text',
  run_at: 'timestamptz',
  created_at: 'timestamptz',
  max_attempts: 'int',
  backoff: 'jsonb',
  lease_ms: 'bigint',
  replay_of: 'text',
  idempotency_expires_at: 'timestamptz',
  idempotency_until_finished: 'boolean',
  retain_completed_ms: 'bigint',
  retain_dead_ms: 'bigint',
  timeout_ms: 'bigint',
};

/** Parameter `$n` of `field`'s type. */
function fieldParam(n: number, field: NewJobField): string {
  return `$${n}::${NEW_JOB_FIELD_TYPES[field]}`;
}

/**
 * Parameter `$n`, an array of `field`'s values: of its type, except that a `jsonb` field's array is `text[]`,
 * each element cast in its own row (`unnestedValue`), so still parsed once. PostgreSQL reads a `jsonb[]`
 * parameter more slowly than it casts the same texts one by one (docs/stores/postgres.md has the figures).
 */
function arrayParam(n: number, field: NewJobField): string {
  const type = NEW_JOB_FIELD_TYPES[field];
  return `$${n}::${type === 'jsonb' ? 'text' : type}[]`;
}

/** `field`'s value, of its column's type, in a row of the arrays unnested as `u` (see `arrayParam`). */
function unnestedValue(field: NewJobField): string {
  return NEW_JOB_FIELD_TYPES[field] === 'jsonb' ? `u.${field}::jsonb` : `u.${field}`;
}

/**
 * `INSERT … SELECT` values for one new job, from `field`, the SQL expression of each `NewJobField` (of the type
 * `NEW_JOB_FIELD_TYPES` gives): not started, with no attempts, unless `handed` (an SQL boolean) says an insert
 * leases it at once.
 */
function insertValues(field: (name: NewJobField) => string, handed = 'false'): string {
  const [runAt, createdAt, order] = [field('run_at'), field('created_at'), field('job_order')];
  const state = `CASE WHEN ${handed} THEN 'active' ELSE ${notStartedSql(runAt, createdAt)} END`;
  return `${field('id')}, ${field('name')}, ${field('version')}, ${field('payload')}, ${state}, ${field('priority')}, ${order}, ${orderKeySql(order, runAt)}, ${runAt}, ${createdAt}, ${createdAt}, ${handed}::int, ${field('max_attempts')}, ${field('backoff')}, ${field('lease_ms')}, 0, ${field('idempotency_key')}, ${field('replay_of')}, ${field('trace_context')}, ${field('idempotency_expires_at')}, ${field('job_group')}, ${field('idempotency_until_finished')}, ${field('retain_completed_ms')}, ${field('retain_dead_ms')}, ${field('timeout_ms')}`;
}

/**
 * The insert of one job into the jobs table of `schema` (quoted), `NEW_JOB_FIELDS` as scalar parameters, leased
 * in the same statement to the claim of the six parameters after them (now, min version, max version, lease
 * token, worker id, lease expiry), when it is due, in range, no job that claim could take is ready or due, and
 * the type's settings do not hold its claims back (`claimsHeldBackSql`: only the limited claim leases those);
 * otherwise inserted as `insertJobs` would. A job it leases with a time limit gets its attempt's deadline as a
 * claim sets it (`LEASE_UNTIL_DEADLINE`): now + `timeout_ms` (`NULL` without one); the lease expiry passed
 * stops there already (`leaseExpiry`). `OFFSET 0` keeps the decision `h` a subquery of its own, decided once:
 * pulled up into the six columns that read it, its lookups would run six times each.
 */
export function insertAndClaimJobSql(schema: string, options: { skipTakenKey: boolean }): string {
  const jobs = `${schema}.jobs`;
  const field = (name: NewJobField) => fieldParam(NEW_JOB_FIELDS.indexOf(name) + 1, name);
  const leased = (value: string) => `CASE WHEN h.handed THEN ${value} END`;
  const claimParam = (k: number) => `$${NEW_JOB_FIELDS.length + k}`;
  const [now, minVersion, maxVersion] = [claimParam(1), claimParam(2), claimParam(3)] as const;
  const [token, worker, expiry] = [claimParam(4), claimParam(5), claimParam(6)] as const;
  const deadline = `${now}::timestamptz + ${field('timeout_ms')} * interval '1 millisecond'`;
  return `INSERT INTO ${jobs} AS j (${INSERT_COLUMNS}, lease_token, worker_id, lease_expires_at, attempt_deadline)
SELECT ${insertValues(field, 'h.handed')}, ${leased(token)}, ${leased(worker)}, ${leased(`${expiry}::timestamptz`)}, ${leased(deadline)}
FROM (SELECT ${field('run_at')} <= ${now}::timestamptz
  AND ${field('version')} BETWEEN ${minVersion}::int AND ${maxVersion}::int
  AND NOT EXISTS (
    SELECT 1 FROM ${jobs} AS c
    WHERE c.state = 'waiting' AND c.name = ${field('name')} AND c.run_at <= ${now}::timestamptz
      AND c.version BETWEEN ${minVersion}::int AND ${maxVersion}::int)
  AND NOT EXISTS (
    SELECT 1 FROM ${jobs} AS d
    WHERE d.state = 'delayed' AND d.name = ${field('name')} AND d.run_at <= ${now}::timestamptz
      AND d.version BETWEEN ${minVersion}::int AND ${maxVersion}::int)
  AND NOT ${claimsHeldBackSql(`${schema}.queue_settings`, field('name'), now)}
  OFFSET 0) AS h(handed)
${options.skipTakenKey ? 'ON CONFLICT (name, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING\n' : ''}RETURNING j.state`;
}

/** What a debounce sets on a holder not yet started, by `DebounceMode` (`keepFirst` rewrites one column as it is). */
const DEBOUNCE_CHANGES: Record<DebounceMode, string> = {
  replace: `payload = excluded.payload, version = excluded.version, priority = excluded.priority,
  max_attempts = excluded.max_attempts, backoff = excluded.backoff, lease_ms = excluded.lease_ms,
  retain_completed_ms = excluded.retain_completed_ms, retain_dead_ms = excluded.retain_dead_ms,
  timeout_ms = excluded.timeout_ms, run_at = excluded.run_at, order_key = ${orderKeySql('j.job_order', 'excluded.run_at')}, state = excluded.state,
  updated_at = excluded.created_at`,
  preserveRunAt: `payload = excluded.payload, version = excluded.version, priority = excluded.priority,
  max_attempts = excluded.max_attempts, backoff = excluded.backoff, lease_ms = excluded.lease_ms,
  retain_completed_ms = excluded.retain_completed_ms, retain_dead_ms = excluded.retain_dead_ms,
  timeout_ms = excluded.timeout_ms, updated_at = excluded.created_at`,
  keepFirst: 'debounce_key = j.debounce_key',
};

/**
 * The debounce of one job in `mode` (see `Store.debounceJobs`): `NEW_JOB_FIELDS` as scalar parameters, then its
 * debounce key. Inserted when no job holds the key; when one not yet started does, it is changed as `mode` says
 * (`DEBOUNCE_CHANGES`) instead. The conflict locks the holder, so a claim (which skips locked jobs) and this
 * update never both apply to it as it was. Returns the job inserted or the holder, as changed; no row when the
 * holder has started (even if it now waits for a retry) or finished: it is left unchanged.
 */
export function debounceJobSql(jobs: string, mode: DebounceMode): string {
  const field = (name: NewJobField) => fieldParam(NEW_JOB_FIELDS.indexOf(name) + 1, name);
  return `INSERT INTO ${jobs} AS j (${INSERT_COLUMNS}, debounce_key)
SELECT ${insertValues(field)}, $${NEW_JOB_FIELDS.length + 1}::text
ON CONFLICT (name, debounce_key) WHERE debounce_key IS NOT NULL DO UPDATE
SET ${DEBOUNCE_CHANGES[mode]}
WHERE j.state IN ${NOT_STARTED_SQL} AND j.attempts = 0
RETURNING ${JOB_COLUMNS}`;
}

/**
 * The insert of `newJobParams(jobs, alike)`: arrays unnested in order,
 * and with `alike`, the settings as scalar parameters after them.
 */
export function insertJobsSql(jobs: string, options: { skipTakenKeys: boolean; alike: boolean }): string {
  const arrayFields: readonly NewJobField[] = options.alike ? PER_JOB_FIELDS : NEW_JOB_FIELDS;
  const field = (name: NewJobField) =>
    arrayFields.includes(name)
      ? unnestedValue(name)
      : fieldParam(arrayFields.length + SETTINGS_FIELDS.indexOf(name as SettingsField) + 1, name);
  const arrays = arrayFields.map((name, i) => arrayParam(i + 1, name)).join(', ');
  return `INSERT INTO ${jobs} AS j (${INSERT_COLUMNS})
SELECT ${insertValues(field)}
FROM unnest(${arrays}) WITH ORDINALITY AS u(${arrayFields.join(', ')}, ord)
ORDER BY u.ord
${options.skipTakenKeys ? 'ON CONFLICT (name, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING\nRETURNING j.id' : ''}`;
}
