/** Flow control on PostgreSQL: the per-type settings table and the limited claim (see `FlowControlStore`). */
import type { ClaimRequest, LimitedClaim, QueueSettings, QueueSettingsChange } from '../../engine/store.ts';
import type { FlowState } from '../shared/limited-claim.ts';
import type { SqlQueryable } from './connection.ts';
import { type ClaimedRow, claimedColumnsOf, toClaimedRecord } from './sql/claim-jobs.ts';

interface SettingsRow {
  name: string;
  paused: boolean;
  concurrency: number | null;
  rate_max: number | null;
  /** bigint: node-postgres returns a string, PGlite a number. */
  rate_per_ms: string | number | null;
  group_concurrency: number | null;
  group_order: 'strict' | null;
  grouped: boolean;
  recent_starts: (string | number)[];
  last_turn: string | number;
  held_until: Date | null;
  updated_at: Date;
}

const SETTINGS_COLUMNS =
  'q.name, q.paused, q.concurrency, q.rate_max, q.rate_per_ms, q.group_concurrency, q.group_order, q.grouped, q.recent_starts, q.last_turn, q.held_until, q.updated_at';

function toFlowState(row: SettingsRow): FlowState {
  return {
    name: row.name,
    paused: row.paused,
    concurrency: row.concurrency,
    rateLimit: row.rate_max === null ? null : { max: row.rate_max, perMs: Number(row.rate_per_ms) },
    groupConcurrency: row.group_concurrency,
    groupOrder: row.group_order,
    grouped: row.grouped,
    heldUntil: row.held_until,
    updatedAt: row.updated_at,
    recentStarts: row.recent_starts.map(Number),
    lastTurn: Number(row.last_turn),
  };
}

function toSettings(row: SettingsRow): QueueSettings {
  const { recentStarts: _starts, lastTurn: _turn, ...settings } = toFlowState(row);
  return settings;
}

/** The statements of flow control, for the store's quoted schema. Values are always parameters. */
export function buildFlowStatements(schema: string) {
  return {
    /** $1 name or null. */
    listSettings: `SELECT ${SETTINGS_COLUMNS} FROM ${schema}.queue_settings AS q WHERE $1::text IS NULL OR q.name = $1 ORDER BY q.name`,

    /**
     * $1 name, $2 paused or null (unchanged), $3 whether to set concurrency, $4 concurrency, $5 whether to set the
     * rate limit, $6 its max, $7 its window, $8 whether to set group concurrency, $9 group concurrency, $10 grouped
     * (true) or null (unchanged), $11 now, $12 held until or null (unchanged; a later hold stored stays), $13 whether
     * to set group order, $14 group order, $15 whether to lift the hold (then $12 is null). Writes nothing and
     * returns no row where the change of a group limit would leave strict order beside a group concurrency other
     * than 1 (`breaksStrictOrder`): the new row is proposed unless it would, or a row is stored (settings are never
     * deleted), and the stored row is updated only where the limits it would leave hold.
     */
    updateSettings: `INSERT INTO ${schema}.queue_settings AS q
  (name, paused, concurrency, rate_max, rate_per_ms, group_concurrency, grouped, updated_at, held_until, group_order)
SELECT $1::text, coalesce($2::boolean, false), $4::int, $6::int, $7::bigint, $9::int, coalesce($10::boolean, false),
  $11::timestamptz, $12::timestamptz, $14::text
WHERE $14::text IS DISTINCT FROM 'strict' OR $9::int = 1
  OR EXISTS (SELECT 1 FROM ${schema}.queue_settings AS s WHERE s.name = $1::text)
ON CONFLICT (name) DO UPDATE SET
  held_until = CASE WHEN $15::boolean THEN NULL ELSE greatest(q.held_until, $12::timestamptz) END,
  paused = coalesce($2::boolean, q.paused),
  concurrency = CASE WHEN $3::boolean THEN $4::int ELSE q.concurrency END,
  rate_max = CASE WHEN $5::boolean THEN $6::int ELSE q.rate_max END,
  rate_per_ms = CASE WHEN $5::boolean THEN $7::bigint ELSE q.rate_per_ms END,
  group_concurrency = CASE WHEN $8::boolean THEN $9::int ELSE q.group_concurrency END,
  grouped = q.grouped OR coalesce($10::boolean, false),
  updated_at = $11::timestamptz,
  group_order = CASE WHEN $13::boolean THEN $14::text ELSE q.group_order END
WHERE NOT ($8::boolean OR $13::boolean)
  OR CASE WHEN $13::boolean THEN $14::text ELSE q.group_order END IS DISTINCT FROM 'strict'
  OR CASE WHEN $8::boolean THEN $9::int ELSE q.group_concurrency END = 1
RETURNING ${SETTINGS_COLUMNS}`,

    /**
     * $1 name, $2 now, $3 min version, $4 max version, $5 limit, $6 lease token, $7 worker id, $8 lease ms or null.
     * `claim_under_limits` (sql/claim-under-limits.ts) holds the type's
     * settings row until the claim commits: limited claims of a type run one at a time. Its jobs come first, in claim
     * order; the row without a job says whether the type is paused and when the next start is possible.
     */
    claimLimited: `SELECT f.type_paused, f.next_start_ms, ${claimedColumnsOf('f')}
FROM ${schema}.claim_under_limits($1, $2::timestamptz, $3::int, $4::int, $5::int, $6, $7, $8::bigint) AS f
ORDER BY f.claim_order NULLS LAST`,
  };
}

export type FlowStatements = ReturnType<typeof buildFlowStatements>;

/** See `FlowControlStore.listQueueSettings`. */
export async function listQueueSettings(
  db: SqlQueryable,
  sql: FlowStatements,
  name?: string,
): Promise<QueueSettings[]> {
  return (await db.query<SettingsRow>(sql.listSettings, [name ?? null])).map(toSettings);
}

/** See `FlowControlStore.updateQueueSettings`. */
export async function updateQueueSettings(
  db: SqlQueryable,
  sql: FlowStatements,
  name: string,
  change: QueueSettingsChange,
  now: Date,
): Promise<QueueSettings | null> {
  const rate = change.rateLimit ?? null;
  const [row] = await db.query<SettingsRow>(sql.updateSettings, [
    name,
    change.paused ?? null,
    change.concurrency !== undefined,
    change.concurrency ?? null,
    change.rateLimit !== undefined,
    rate?.max ?? null,
    rate?.perMs ?? null,
    change.groupConcurrency !== undefined,
    change.groupConcurrency ?? null,
    change.grouped ?? null,
    now,
    change.heldUntil ?? null,
    change.groupOrder !== undefined,
    change.groupOrder ?? null,
    change.heldUntil === null,
  ]);
  return row ? toSettings(row) : null;
}

/**
 * See `FlowControlStore.claimLimitedJobs`: one statement, `claim_under_limits`
 * (sql/claim-under-limits.ts), which runs the algorithm of `claimUnderSettings`
 * (shared/limited-claim.ts) inside the database while it holds the type's settings row, so a limited claim costs
 * one round trip like a plain one.
 */
export async function claimLimitedJobs(
  db: SqlQueryable,
  sql: FlowStatements,
  request: ClaimRequest,
): Promise<LimitedClaim> {
  const { name, now, minVersion, maxVersion, limit, leaseToken, workerId, leaseMs } = request;
  const rows = await db.query<ClaimedRow & { type_paused: boolean; next_start_ms: string | number | null }>(
    sql.claimLimited,
    [name, now, minVersion, maxVersion, limit, leaseToken, workerId, leaseMs],
  );
  const status = rows[rows.length - 1];
  const jobs = rows.slice(0, -1).map((row) => toClaimedRecord(row, request));
  const nextStartMs = status?.next_start_ms ?? null;
  return {
    jobs,
    paused: status?.type_paused ?? false,
    nextStartAt: nextStartMs === null ? null : new Date(Number(nextStartMs)),
  };
}
