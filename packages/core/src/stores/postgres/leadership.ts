import type { LeaderElection } from '../../roles/leadership.ts';
import type { SqlClient } from './connection.ts';

/**
 * Leader election on PostgreSQL: a lease row per role in `leaders`. Taking or
 * renewing is one upsert, which the row's lock makes atomic: it writes only
 * when the row is free, expired or already the holder's.
 */
export function createPgLeaderElection(client: SqlClient, quotedSchema: string): LeaderElection {
  const leaders = `${quotedSchema}.leaders`;
  const tryLead = `INSERT INTO ${leaders} AS l (role, holder, expires_at) VALUES ($1, $2, $4::timestamptz)
ON CONFLICT (role) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE l.holder = excluded.holder OR l.expires_at <= $3::timestamptz
RETURNING l.holder`;
  const resign = `DELETE FROM ${leaders} WHERE role = $1 AND holder = $2`;
  return {
    async tryLead(role, holder, now, ttlMs) {
      const rows = await client.query(tryLead, [role, holder, now, new Date(now.getTime() + ttlMs)]);
      return rows.length > 0;
    },
    async resign(role, holder) {
      await client.query(resign, [role, holder]);
    },
  };
}
