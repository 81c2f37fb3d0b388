import type { Pool } from 'mysql2/promise';
import type { LeaderElection } from '../../roles/leadership.ts';
import { execute } from './connection.ts';
import { withDeadlockRetry } from './errors.ts';
import { sqlDate } from './records.ts';
import type { Tables } from './tables.ts';

/**
 * Leader election on MySQL/MariaDB: a lease row per role in `leaders`.
 * Renewing or taking an expired lease is one `UPDATE` whose row lock makes it
 * atomic (a second contender re-reads the row once the first commits, and no
 * longer matches); taking a role nobody held is an insert that a concurrent
 * one turns into a no-op.
 */
export function createMysqlLeaderElection(pool: Pool, t: Tables, target: string): LeaderElection {
  return {
    tryLead(role, holder, now, ttlMs) {
      const expiresAt = sqlDate(new Date(now.getTime() + ttlMs));
      return withDeadlockRetry(target, 'tryLead', async () => {
        const renewed = await execute(
          pool,
          `UPDATE ${t.leaders} SET holder = ?, expires_at = ? WHERE role = ? AND (holder = ? OR expires_at <= ?)`,
          [holder, expiresAt, role, holder, sqlDate(now)],
        );
        if (renewed.affectedRows > 0) return true;
        // IGNORE only turns a taken role (a duplicate key) into "not the leader"; the values are plain text.
        const taken = await execute(
          pool,
          `INSERT IGNORE INTO ${t.leaders} (role, holder, expires_at) VALUES (?, ?, ?)`,
          [role, holder, expiresAt],
        );
        return taken.affectedRows > 0;
      });
    },
    async resign(role, holder) {
      await withDeadlockRetry(target, 'resign', () =>
        execute(pool, `DELETE FROM ${t.leaders} WHERE role = ? AND holder = ?`, [role, holder]),
      );
    },
  };
}
