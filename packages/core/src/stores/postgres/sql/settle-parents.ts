import { FINISHED_STATES } from '../../../jobs.ts';
import { appendedErrorsSql } from '../error-history.ts';
import { notStartedSql } from '../sql-fragments.ts';

/** The stored states of jobs that have not ended: a child in one of these is pending. */
export const UNFINISHED_SQL = `('delayed', 'waiting', 'waiting-children', 'active')`;

/** The finished states, as an SQL list. */
export const FINISHED_SQL = `(${FINISHED_STATES.map((state) => `'${state}'`).join(', ')})`;

/**
 * The setting in which a transaction gathers the names of the parents its statements made ready (a JSON array
 * as text; empty or unset: none). A statement that may end children selects it after its function has run
 * (`readiedSql`), so the store can tell the engine (`FlowStore.onParentsReady`).
 */
export const READIED_SETTING = 'workq.readied_parents';

/** A select-list expression: the names of parents made ready in this transaction so far (JSON text, or '' or null). */
export const readiedSql = `current_setting('${READIED_SETTING}', true)`;

/**
 * `count_down_parents(parents, counts, done_at)`: the parents `parents` (ids, in id order, each once) of children
 * that have just ended without failing them, each counting `counts` (the same position) of its children down: a
 * `waiting-children` parent at 0 becomes waiting (delayed while its run time is ahead), in its place. Locks the
 * parents' rows in id order first, so that concurrent settles queue on a parent's row instead of deadlocking.
 * Appends the names of the parents made ready to `READIED_SETTING` for the transaction. Returns nothing.
 */
export const COUNT_DOWN_PARENTS = `
CREATE FUNCTION count_down_parents(parents text[], counts integer[], done_at timestamptz)
RETURNS void LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $body$ DECLARE readied text[]; BEGIN
  PERFORM 1 FROM jobs AS p WHERE p.id = ANY(parents) ORDER BY p.id FOR UPDATE;
  WITH counted AS (
    UPDATE jobs AS j SET pending_children = j.pending_children - e.n, updated_at = done_at,
      state = CASE WHEN j.pending_children > e.n THEN 'waiting-children' ELSE ${notStartedSql('j.run_at', 'done_at')} END
    FROM unnest(parents, counts) AS e(parent_id, n) WHERE j.id = e.parent_id AND j.state = 'waiting-children'
    RETURNING j.name, j.state)
  SELECT array_agg(c.name) INTO readied FROM counted AS c WHERE c.state = 'waiting';
  IF readied IS NOT NULL THEN
    PERFORM set_config('${READIED_SETTING}',
      (coalesce(nullif(current_setting('${READIED_SETTING}', true), ''), '[]')::jsonb || to_jsonb(readied))::text, true);
  END IF; END $body$`;

/**
 * `settle_parents(ended, done_at)`: settles the parents of the jobs `ended` (ids of children that have just
 * ended in this transaction: completed, dead or cancelled), as `FlowStore` states. Per round: the parents of
 * `ended` are locked in id order (so concurrent settles queue on a parent's row instead of deadlocking), the
 * `waiting-children` ones that a child under `fail-parent` failed go dead (`CHILD_FAILED`, naming the first such
 * child) and their unfinished descendants are cancelled (`cancel_flow_descendants`); the others count their
 * ended children down (`count_down_parents`). The parents that went dead are the next round's `ended`, until
 * none is left. Completions, which fail no parent, count down without it (`complete_jobs`).
 *
 * Returns nothing; appends the names of the parents made ready to `READIED_SETTING` for the transaction.
 * Locks: the parents' rows, and the descendants it cancels.
 */
export const SETTLE_PARENTS = `
CREATE FUNCTION settle_parents(ended text[], done_at timestamptz)
RETURNS void LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $body$ DECLARE failed text[]; parents text[]; counts integer[]; BEGIN
  WHILE cardinality(ended) > 0 LOOP
    PERFORM 1 FROM jobs AS p WHERE p.id IN (SELECT c.parent_id FROM jobs AS c WHERE c.id = ANY(ended))
      ORDER BY p.id FOR UPDATE;
    WITH failing AS (
      SELECT DISTINCT ON (c.parent_id) c.parent_id,
        left('Child job ' || c.id || ' (' || c.name || ') ended ' || c.state || coalesce(': ' || (c.error->>'message'), ''), 4000) AS message
      FROM jobs AS c
      WHERE c.id = ANY(ended) AND c.on_failure = 'fail-parent' AND c.state IN ('dead', 'cancelled')
      ORDER BY c.parent_id, c.id),
    failed_parents AS (
      UPDATE jobs AS j SET state = 'dead', finished_at = done_at, updated_at = done_at,
        error = jsonb_build_object('message', f.message, 'code', 'CHILD_FAILED', 'attempt', j.attempts, 'at', done_at),
        errors = ${appendedErrorsSql("jsonb_build_object('message', f.message, 'code', 'CHILD_FAILED', 'attempt', j.attempts, 'at', done_at)")}
      FROM failing AS f WHERE j.id = f.parent_id AND j.state = 'waiting-children'
      RETURNING j.id)
    SELECT coalesce(array_agg(d.id), '{}') INTO failed FROM failed_parents AS d;
    SELECT array_agg(e.parent_id ORDER BY e.parent_id), array_agg(e.n ORDER BY e.parent_id) INTO parents, counts
    FROM (SELECT c.parent_id, count(*)::int AS n FROM jobs AS c
      WHERE c.id = ANY(ended) AND c.parent_id IS NOT NULL AND NOT (c.parent_id = ANY(failed))
      GROUP BY c.parent_id) AS e;
    IF parents IS NOT NULL THEN PERFORM count_down_parents(parents, counts, done_at); END IF;
    IF cardinality(failed) > 0 THEN PERFORM cancel_flow_descendants(failed, done_at); END IF;
    ended := failed;
  END LOOP; END $body$`;

/**
 * How long `cancel_flow_descendants` waits for a descendant's row another transaction holds: a write that does not
 * end the job commits well within it, and it is far below `deadlock_timeout` (1 s by default), so a completion
 * that waits for the parent's row in turn is let go rather than failed as a deadlock.
 */
const FLOW_CANCEL_LOCK_WAIT = '200ms';

/** What `cancel_flow_descendants` sets on each job it cancels: ended, its lease too, with `FLOW_CANCELLED`. */
const CANCELLED_WITH_FLOW = `state = 'cancelled', lease_token = NULL, lease_expires_at = NULL, finished_at = done_at,
  updated_at = done_at,
  error = jsonb_build_object('message', 'Cancelled with its flow: its parent ' || j.parent_id || ' was cancelled or went dead.',
    'code', 'FLOW_CANCELLED', 'attempt', j.attempts, 'at', done_at),
  errors = ${appendedErrorsSql("jsonb_build_object('message', 'Cancelled with its flow: its parent ' || j.parent_id || ' was cancelled or went dead.', 'code', 'FLOW_CANCELLED', 'attempt', j.attempts, 'at', done_at)")}`;

/**
 * `cancel_flow_descendants(parents, done_at)`: cancels every unfinished job below `parents` (at every depth), as
 * `cancelJob` cancels (lease ended, `finished_at` set), with the error `FLOW_CANCELLED` naming its parent.
 * Their parents have ended, so no parent is settled. Locks: the rows it cancels. First `SKIP LOCKED`; then each
 * job still unfinished is waited for, at most `FLOW_CANCEL_LOCK_WAIT`: a row another transaction holds for a
 * write that does not end it (a lease extension, progress) is cancelled once that commits, where skipping it left
 * a running job of a cancelled flow running. A job that transaction is ending (its completion then waits for the
 * parent's row, which this transaction holds) is left to that end when the wait runs out, before a deadlock
 * would be detected; its parent, finished, is then left as it is.
 */
export const CANCEL_FLOW_DESCENDANTS = `
CREATE FUNCTION cancel_flow_descendants(parents text[], done_at timestamptz)
RETURNS void LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $body$ DECLARE below text[]; waited text := current_setting('lock_timeout'); BEGIN
  WITH RECURSIVE d(id) AS (
    SELECT c.id FROM jobs AS c WHERE c.parent_id = ANY(parents)
    UNION ALL SELECT c.id FROM jobs AS c JOIN d ON c.parent_id = d.id)
  SELECT array_agg(d.id) INTO below FROM d;
  IF below IS NULL THEN RETURN; END IF;
  UPDATE jobs AS j SET ${CANCELLED_WITH_FLOW}
  WHERE j.id IN (SELECT s.id FROM jobs AS s WHERE s.id = ANY(below) AND s.state IN ${UNFINISHED_SQL}
    FOR UPDATE SKIP LOCKED);
  BEGIN
    PERFORM set_config('lock_timeout', '${FLOW_CANCEL_LOCK_WAIT}', true);
    UPDATE jobs AS j SET ${CANCELLED_WITH_FLOW}
    WHERE j.id IN (SELECT s.id FROM jobs AS s WHERE s.id = ANY(below) AND s.state IN ${UNFINISHED_SQL} FOR UPDATE);
    PERFORM set_config('lock_timeout', waited, true);
  EXCEPTION WHEN lock_not_available THEN NULL;
  END; END $body$`;

/**
 * `revive_parents(retried, done_at)`: after the dead jobs `retried` went back to waiting (`retryDeadJobs`), revives
 * each parent above them that is dead of a child (`CHILD_FAILED`), and up from it each ancestor dead of it in
 * turn: their descendants cancelled with the flow (`FLOW_CANCELLED`) go back to waiting with fresh attempts,
 * and each of those parents, and each revived job with children not ended, is `waiting-children` with
 * `pending_children` recounted, `finished_at` cleared. Locks: the rows it changes.
 */
export const REVIVE_PARENTS = `
CREATE FUNCTION revive_parents(retried text[], done_at timestamptz)
RETURNS void LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $body$ DECLARE chain text[] := '{}'; level text[] := retried; revived text[]; BEGIN
  LOOP
    SELECT array_agg(DISTINCT p.id) INTO level FROM jobs AS c JOIN jobs AS p ON p.id = c.parent_id
    WHERE c.id = ANY(level) AND p.state = 'dead' AND p.error->>'code' = 'CHILD_FAILED';
    EXIT WHEN level IS NULL;
    chain := chain || level;
  END LOOP;
  IF cardinality(chain) = 0 THEN RETURN; END IF;
  WITH RECURSIVE d(id) AS (
    SELECT c.id FROM jobs AS c WHERE c.parent_id = ANY(chain)
    UNION ALL SELECT c.id FROM jobs AS c JOIN d ON c.parent_id = d.id)
  SELECT coalesce(array_agg(j.id), '{}') INTO revived FROM jobs AS j
  WHERE j.id IN (SELECT d.id FROM d) AND j.state = 'cancelled' AND j.error->>'code' = 'FLOW_CANCELLED';
  UPDATE jobs AS j SET state = ${notStartedSql('j.run_at', 'done_at')}, attempts = 0, finished_at = NULL, updated_at = done_at
  WHERE j.id = ANY(revived);
  UPDATE jobs AS j SET state = 'waiting-children', finished_at = NULL, updated_at = done_at WHERE j.id = ANY(chain);
  UPDATE jobs AS j SET pending_children = k.n,
    state = CASE WHEN k.n > 0 THEN 'waiting-children' ELSE j.state END
  FROM (SELECT p.id, (SELECT count(*) FROM jobs AS c WHERE c.parent_id = p.id AND c.state IN ${UNFINISHED_SQL})::int AS n
    FROM jobs AS p WHERE p.id = ANY(chain || revived)) AS k
  WHERE j.id = k.id; END $body$`;
