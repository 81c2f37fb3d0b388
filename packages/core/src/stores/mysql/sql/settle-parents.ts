/**
 * Settle parents: what a child's end does to its parent (`FlowStore`, "A child's end"), in the transaction of
 * the end itself (the caller's), after the children's own rows were changed.
 *
 * Takes the children that ended (id, name, parent, policy, how they ended, their last error) and `now`. Locks
 * their parents `FOR UPDATE`, in id order, so racing ends of one parent's children, on any connection, take
 * turns on its row: each reads the count the previous one left. A `waiting-children` parent either goes dead
 * (a child under `fail-parent` ended dead or cancelled: its error names the child, its unfinished descendants
 * are cancelled, cancel-descendants.ts) or counts its ended children off `pending_children`, becoming waiting
 * (ready, or `delayed` when its run time is ahead) at 0, exactly once. A parent that is not `waiting-children`
 * is left as it is. A parent that went dead and is itself a child ends in turn: its own parent is settled
 * next, in the same transaction. Returns the names of the parents made ready (waiting and due at `now`).
 */
import type { PoolConnection } from 'mysql2/promise';
import { childFailedError } from '../../../engine/flow-store.ts';
import type { ChildFailurePolicy, JobError } from '../../../jobs.ts';
import { byParent, type EndedChild, failingChild } from '../../shared/flow-records.ts';
import { notStartedState } from '../../shared/not-started.ts';
import { execute, selectRows } from '../connection.ts';
import { appendedErrorsSql } from '../error-history.ts';
import { delayedUntil, readDate, sqlDate, writeJson } from '../records.ts';
import type { Tables } from '../tables.ts';
import { cancelDescendants } from './cancel-descendants.ts';

/** The children among rows read with `parent_id`, `on_failure` (and `id`, `name`), as they ended. */
export function endedChildren(
  rows: readonly Record<string, unknown>[],
  end: EndedChild['end'],
  error: (row: Record<string, unknown>) => JobError | null = () => null,
): EndedChild[] {
  return rows
    .filter((row) => row.parent_id !== null && row.parent_id !== undefined)
    .map((row) => ({
      id: String(row.id),
      name: String(row.name),
      parentId: String(row.parent_id),
      onFailure: (row.on_failure ?? 'fail-parent') as ChildFailurePolicy,
      end,
      error: error(row),
    }));
}

export async function settleParents(
  c: PoolConnection,
  t: Tables,
  ended: readonly EndedChild[],
  now: Date,
): Promise<string[]> {
  const ready: string[] = [];
  let round = ended;
  while (round.length > 0) round = await settleRound(c, t, round, now, ready);
  return ready;
}

/** Settles the parents of `ended`; resolves to the parents that went dead and are children themselves. */
async function settleRound(
  c: PoolConnection,
  t: Tables,
  ended: readonly EndedChild[],
  now: Date,
  ready: string[],
): Promise<EndedChild[]> {
  const children = byParent(ended);
  const parents = await selectRows(
    c,
    `SELECT id, name, state, pending_children, attempts, run_at, parent_id, on_failure FROM ${t.jobs}
       WHERE id IN (?) ORDER BY id FOR UPDATE`,
    [[...children.keys()]],
  );
  const next: EndedChild[] = [];
  for (const parent of parents) {
    if (parent.state !== 'waiting-children') continue;
    const id = String(parent.id);
    const ended = children.get(id) ?? [];
    const failing = failingChild(ended);
    if (failing) {
      const error = childFailedError(
        { id: failing.id, name: failing.name, error: failing.error },
        failing.end === 'dead' ? 'dead' : 'cancelled',
        Number(parent.attempts),
        now,
      );
      const recorded = writeJson(error);
      await execute(
        c,
        `UPDATE ${t.jobs} SET state = 'dead', errors = ${appendedErrorsSql('?')}, error = ?, finished_at = ?, updated_at = ?
           WHERE id = ?`,
        [recorded, recorded, sqlDate(now), sqlDate(now), id],
      );
      await cancelDescendants(c, t, [id], now);
      next.push(...endedChildren([parent], 'dead', () => error));
      continue;
    }
    const pending = Math.max(0, Number(parent.pending_children) - ended.length);
    if (pending > 0) {
      await execute(c, `UPDATE ${t.jobs} SET pending_children = ?, updated_at = ? WHERE id = ?`, [
        pending,
        sqlDate(now),
        id,
      ]);
      continue;
    }
    const runAt = readDate(parent.run_at);
    const state = notStartedState(runAt, now);
    await execute(
      c,
      `UPDATE ${t.jobs} SET state = ?, delayed_until = ?, pending_children = 0, updated_at = ? WHERE id = ?`,
      [state, delayedUntil(state, runAt), sqlDate(now), id],
    );
    if (state === 'waiting') ready.push(String(parent.name));
  }
  return next;
}
