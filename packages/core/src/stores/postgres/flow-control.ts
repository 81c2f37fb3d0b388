/** Flow control on PostgreSQL: the per-type settings table and the limited claim (see `FlowControlStore`). */
import type {
  ClaimedRecord,
  ClaimRequest,
  LimitedClaim,
  QueueSettings,
  QueueSettingsChange,
} from '../../engine/store.ts';
import { claimUnderSettings, type FlowState, takesTurns } from '../shared/limited-claim.ts';
import { CLAIMED_COLUMNS, type ClaimedRow, toClaimedRecord } from './job-rows.ts';
import type { SqlClient, SqlQueryable } from './sql-client.ts';

interface SettingsRow {
  name: string;
  paused: boolean;
  concurrency: number | null;
  rate_max: number | null;
  /** bigint: node-postgres returns a string, PGlite a number. */
  rate_per_ms: string | number | null;
  group_concurrency: number | null;
  grouped: boolean;
  recent_starts: (string | number)[];
  last_turn: string | number;
  updated_at: Date;
}

const SETTINGS_COLUMNS =
  'q.name, q.paused, q.concurrency, q.rate_max, q.rate_per_ms, q.group_concurrency, q.grouped, q.recent_starts, q.last_turn, q.updated_at';

function toFlowState(row: SettingsRow): FlowState {
  return {
    name: row.name,
    paused: row.paused,
    concurrency: row.concurrency,
    rateLimit: row.rate_max === null ? null : { max: row.rate_max, perMs: Number(row.rate_per_ms) },
    groupConcurrency: row.group_concurrency,
    grouped: row.grouped,
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
  const jobs = `${schema}.jobs`;
  const ready = `j.state = 'waiting' AND j.name = $1 AND j.run_at <= $2::timestamptz AND j.version BETWEEN $3::int AND $4::int`;
  return {
    /** $1 name or null. */
    listSettings: `SELECT ${SETTINGS_COLUMNS} FROM ${schema}.queue_settings AS q WHERE $1::text IS NULL OR q.name = $1 ORDER BY q.name`,

    /**
     * $1 name, $2 paused or null (unchanged), $3 whether to set concurrency, $4 concurrency, $5 whether to set the
     * rate limit, $6 its max, $7 its window, $8 whether to set group concurrency, $9 group concurrency, $10 grouped
     * (true) or null (unchanged), $11 now.
     */
    updateSettings: `INSERT INTO ${schema}.queue_settings AS q
  (name, paused, concurrency, rate_max, rate_per_ms, group_concurrency, grouped, updated_at)
VALUES ($1, coalesce($2::boolean, false), $4::int, $6::int, $7::bigint, $9::int, coalesce($10::boolean, false), $11::timestamptz)
ON CONFLICT (name) DO UPDATE SET
  paused = coalesce($2::boolean, q.paused),
  concurrency = CASE WHEN $3::boolean THEN $4::int ELSE q.concurrency END,
  rate_max = CASE WHEN $5::boolean THEN $6::int ELSE q.rate_max END,
  rate_per_ms = CASE WHEN $5::boolean THEN $7::bigint ELSE q.rate_per_ms END,
  group_concurrency = CASE WHEN $8::boolean THEN $9::int ELSE q.group_concurrency END,
  grouped = q.grouped OR coalesce($10::boolean, false),
  updated_at = $11::timestamptz
RETURNING ${SETTINGS_COLUMNS}`,

    /** $1 name. Holds the type's settings until the transaction ends: limited claims of a type run one at a time. */
    lockSettings: `SELECT ${SETTINGS_COLUMNS} FROM ${schema}.queue_settings AS q WHERE q.name = $1 FOR UPDATE`,

    /** $1 name. */
    countActive: `SELECT count(*)::int AS count FROM ${jobs} AS j WHERE j.state = 'active' AND j.name = $1`,

    /** $1 name. */
    countActiveByGroup: `SELECT j.job_group, count(*)::int AS count FROM ${jobs} AS j
WHERE j.state = 'active' AND j.name = $1 AND j.job_group IS NOT NULL GROUP BY j.job_group`,

    /**
     * $1 name. The groups with waiting jobs, one index probe each along the group claim index (a loose index
     * scan), with their last turns.
     */
    readyGroups: `WITH RECURSIVE g(job_group) AS (
  (SELECT j.job_group FROM ${jobs} AS j WHERE j.state = 'waiting' AND j.name = $1 AND j.job_group IS NOT NULL
   ORDER BY j.job_group LIMIT 1)
  UNION ALL
  SELECT (SELECT j.job_group FROM ${jobs} AS j WHERE j.state = 'waiting' AND j.name = $1 AND j.job_group > g.job_group
          ORDER BY j.job_group LIMIT 1)
  FROM g WHERE g.job_group IS NOT NULL)
SELECT g.job_group, t.last_turn FROM g LEFT JOIN ${schema}.queue_groups AS t ON t.name = $1 AND t.job_group = g.job_group
WHERE g.job_group IS NOT NULL`,

    /**
     * $1 name, $2 now, $3 min version, $4 max version, $5 groups, $6 their caps. Locks up to each cap of the
     * group's jobs the claim could take, in claim order.
     */
    candidates: `SELECT g.job_group, c.id FROM unnest($5::text[], $6::int[]) AS g(job_group, cap)
CROSS JOIN LATERAL (
  SELECT j.id FROM ${jobs} AS j WHERE ${ready} AND j.job_group = g.job_group
  ORDER BY j.priority DESC, j.order_key, j.order_tie LIMIT g.cap FOR UPDATE SKIP LOCKED) AS c`,

    /** $1 ids (locked by `candidates`), $2 now, $3 lease token, $4 worker id, $5 lease ms or null. */
    lease: `UPDATE ${jobs} AS j
SET state = 'active', attempts = j.attempts + 1, lease_token = $3, worker_id = $4,
  lease_expires_at = $2::timestamptz + coalesce($5::bigint, j.lease_ms) * interval '1 millisecond', updated_at = $2::timestamptz
WHERE j.id = ANY($1::text[]) AND j.state = 'waiting'
RETURNING ${CLAIMED_COLUMNS}`,

    /** $1 name, $2 recent starts, $3 last turn, $4 groups, $5 their turns. */
    saveState: `WITH turns AS (
  INSERT INTO ${schema}.queue_groups AS t (name, job_group, last_turn)
  SELECT $1, u.job_group, u.last_turn FROM unnest($4::text[], $5::bigint[]) AS u(job_group, last_turn)
  ON CONFLICT (name, job_group) DO UPDATE SET last_turn = excluded.last_turn)
UPDATE ${schema}.queue_settings AS q SET recent_starts = $2::bigint[], last_turn = $3::bigint WHERE q.name = $1`,
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
): Promise<QueueSettings> {
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
  ]);
  return toSettings(row as SettingsRow);
}

/**
 * See `FlowControlStore.claimLimitedJobs`: one transaction that locks the type's settings row, then runs
 * `claimUnderSettings`. `plainClaim` is the store's `claimJobs` statement, run in that transaction.
 */
export async function claimLimitedJobs(
  client: SqlClient,
  sql: FlowStatements,
  request: ClaimRequest,
  plainClaim: (on: SqlQueryable, request: ClaimRequest) => Promise<ClaimedRecord[]>,
): Promise<LimitedClaim> {
  return client.transaction(async (tx) => {
    const [row] = await tx.query<SettingsRow>(sql.lockSettings, [request.name]);
    if (!row) return { jobs: await plainClaim(tx, request), paused: false, nextStartAt: null };
    const settings = toFlowState(row);
    const { name, now, minVersion, maxVersion } = request;
    const range = [name, now, minVersion, maxVersion];
    return claimUnderSettings(request, settings, {
      countActive: async () => Number((await tx.query<{ count: number }>(sql.countActive, [name]))[0]?.count ?? 0),
      countActiveByGroup: async () => {
        const rows = await tx.query<{ job_group: string; count: number }>(sql.countActiveByGroup, [name]);
        return new Map(rows.map((r) => [r.job_group, Number(r.count)]));
      },
      readyGroups: async () => {
        // A claim of nothing moves the type's due delayed jobs into the claim indexes first, as a claim does.
        await plainClaim(tx, { ...request, limit: 0 });
        const rows = await tx.query<{ job_group: string; last_turn: string | number | null }>(sql.readyGroups, [name]);
        return rows.map((r) => ({ group: r.job_group, lastTurn: r.last_turn === null ? null : Number(r.last_turn) }));
      },
      candidates: async (groups) => {
        const rows = await tx.query<{ job_group: string; id: string }>(sql.candidates, [
          ...range,
          groups.map((g) => g.group),
          groups.map((g) => g.cap),
        ]);
        const byGroup = new Map<string, string[]>();
        for (const r of rows) byGroup.set(r.job_group, [...(byGroup.get(r.job_group) ?? []), r.id]);
        return byGroup;
      },
      lease: async (ids) => {
        const rows = await tx.query<ClaimedRow>(sql.lease, [
          ids,
          now,
          request.leaseToken,
          request.workerId,
          request.leaseMs,
        ]);
        const byId = new Map(rows.map((r) => [r.id, toClaimedRecord(r, request)]));
        return ids.flatMap((id) => byId.get(id) ?? []);
      },
      claimInOrder: (limit) => plainClaim(tx, { ...request, limit }),
      save: async ({ recentStarts, lastTurn, groupTurns }) => {
        const groups = takesTurns(settings) ? [...groupTurns.keys()] : [];
        await tx.query(sql.saveState, [name, recentStarts, lastTurn, groups, groups.map((g) => groupTurns.get(g))]);
      },
    });
  });
}
