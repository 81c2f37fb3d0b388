import { type ListFilter, STORED_STATES, type StoredState } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { type KeptState, keptStates } from '../shared/not-started.ts';
import { jobColumnsFor } from './records.ts';
import { NOT_STARTED_SQL } from './sql-fragments.ts';

/**
 * `listJobs`: one statement, the page of jobs `filter` matches in id order (descending with `newestFirst`).
 *
 * A filter whose rows an index keeps by job type or by group reads each run of that index on its own, up to
 * one page each, and merges the runs by id: a page then reads at most a page per run, however rare the match.
 * Such runs are
 * - a group without a type (the partial `jobs_group_list_idx` on `(job_group, state, id)`), one run per kept
 *   state of the filter (every state without one), so a group's page, in a state or not, is never sorted whole;
 * - a state other than `completed` (the partial `jobs_open_idx` on `(state, name, id)`), one run per type
 *   and kept state, so a state-only page, or a type's `waiting` page (`delayed` and `waiting` kept apart),
 *   is never sorted whole;
 * - an idempotency or debounce key without a type (the `(name, key)` indexes), one look-up per type.
 * The types of a filter without one are read off the same index, one index probe per type (a skip scan).
 * Every other filter walks the primary key in id order, with only the conditions it uses, and reads as
 * many rows as it must pass over: the `completed` state has no index of its own (it is most of a table),
 * nor have versions.
 */
export function buildListJobs(quotedSchema: string, filter: ListFilter): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const order = `ORDER BY j.id${filter.newestFirst ? ' DESC' : ''}`;
  const columns = jobColumnsFor(filter);
  const jobs = `${quotedSchema}.jobs`;
  const runs = typeRuns(filter, jobs, param);
  // A run read in one state leaves the filter's states out, so the planner reads the run's index in id order.
  const inOneState = runs?.runs.every(({ state }) => state !== undefined) === true;
  const conditions = filterConditions(inOneState ? { ...filter, states: undefined } : filter, param);
  if (runs === undefined) {
    const where = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '';
    return {
      text: `SELECT ${columns} FROM ${jobs} AS j${where}\n${order} LIMIT ${param(filter.limit)}::int`,
      params,
    };
  }
  const limit = `LIMIT ${param(filter.limit)}::int`;
  const branches = runs.runs.map(({ names, state }) => {
    const where = [
      ...(names === undefined ? [] : ['j.name = b.name']),
      ...(state === undefined ? [] : [`j.state = ${literal(state)}`]),
    ];
    const run = `SELECT ${columns} FROM ${jobs} AS j
  WHERE ${[...where, ...conditions].join(' AND ')}
  ${order} ${limit}`;
    return names === undefined ? `(${run})` : `SELECT j.* FROM ${names} AS b CROSS JOIN LATERAL (\n  ${run}) AS j`;
  });
  const text = `${runs.with}SELECT ${columns} FROM (${branches.join('\nUNION ALL\n')}) AS j
${order} ${limit}`;
  return { text, params };
}

/** The conditions of `filter` on a job aliased `j`, each value a parameter (states as literals). */
function filterConditions(filter: ListFilter, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  if (filter.name !== undefined) where.push(`j.name = ${param(filter.name)}`);
  if (filter.ids !== undefined) where.push(`j.id = ANY(${param(filter.ids)}::text[])`);
  // States are spliced as literals (from a closed set), so the planner can match them to the partial `jobs_open_idx`.
  if (filter.states !== undefined) where.push(`j.state IN (${statesOf(filter).map(literal).join(', ')})`);
  if (filter.due !== undefined) {
    const comparison = filter.due.ready ? '<=' : '>';
    where.push(`(j.state NOT IN ${NOT_STARTED_SQL} OR j.run_at ${comparison} ${param(filter.due.now)}::timestamptz)`);
  }
  if (filter.version !== undefined) where.push(`j.version = ${param(filter.version)}::int`);
  if (filter.group !== undefined) where.push(`j.job_group = ${param(filter.group)}`);
  if (filter.idempotencyKey !== undefined) where.push(`j.idempotency_key = ${param(filter.idempotencyKey)}`);
  if (filter.debounceKey !== undefined) where.push(`j.debounce_key = ${param(filter.debounceKey)}`);
  if (filter.afterId !== undefined) where.push(`j.id > ${param(filter.afterId)}`);
  if (filter.beforeId !== undefined) where.push(`j.id < ${param(filter.beforeId)}`);
  return where;
}

/**
 * The runs a filter is read in, each the kept state it is read in and, for a run per type, a row source of
 * type names (`b.name`), with the `WITH` clause that finds the names; `undefined` for a filter read in one walk.
 */
function typeRuns(
  filter: ListFilter,
  jobs: string,
  param: (value: unknown) => string,
): { with: string; runs: { names?: string; state?: KeptState }[] } | undefined {
  if (filter.ids !== undefined) return undefined;
  const keyed = filter.idempotencyKey !== undefined || filter.debounceKey !== undefined;
  if (filter.name === undefined && keyed) {
    const column = filter.idempotencyKey !== undefined ? 'idempotency_key' : 'debounce_key';
    return {
      with: `WITH RECURSIVE ${typesIn(jobs, 'type_0', `j.${column} IS NOT NULL`)}\n`,
      runs: [{ names: 'type_0' }],
    };
  }
  if (filter.name === undefined && filter.group !== undefined) {
    const kept = filter.states === undefined ? STORED_STATES.flatMap(keptStates) : statesOf(filter);
    return { with: '', runs: kept.map((state) => ({ state })) };
  }
  const states = filter.states === undefined ? [] : statesOf(filter);
  const open = states.length > 0 && states.every((state) => state !== 'completed');
  if (keyed || !open || (filter.name !== undefined && states.length === 1)) return undefined;
  if (filter.name !== undefined) {
    const names = `(SELECT ${param(filter.name)}::text AS name)`;
    return { with: '', runs: states.map((state) => ({ names, state })) };
  }
  const ctes = states.map((state, i) => typesIn(jobs, `type_${i}`, `j.state = ${literal(state)}`));
  return {
    with: `WITH RECURSIVE ${ctes.join(',\n')}\n`,
    runs: states.map((state, i) => ({ names: `type_${i}`, state })),
  };
}

/**
 * A recursive CTE `cte(name)` of the job types of the rows matching `condition`, in name order: a skip scan,
 * one probe of the index that holds those rows by `name` per type.
 */
function typesIn(jobs: string, cte: string, condition: string): string {
  const first = `SELECT min(j.name) AS name FROM ${jobs} AS j WHERE ${condition}`;
  const next = `SELECT min(j.name) FROM ${jobs} AS j WHERE ${condition} AND j.name > t.name`;
  return `${cte}(name) AS (
  SELECT name FROM (${first}) AS first WHERE name IS NOT NULL
  UNION ALL
  SELECT next.name FROM ${cte} AS t CROSS JOIN LATERAL (${next}) AS next(name) WHERE next.name IS NOT NULL)`;
}

/** The kept states of the filter's states, checked against the closed set. */
function statesOf(filter: ListFilter): KeptState[] {
  return (filter.states ?? []).flatMap((state: StoredState) => {
    if (!(STORED_STATES as readonly string[]).includes(state)) {
      throw new WorkqError('VALIDATION', `Unknown job state "${String(state)}".`);
    }
    return keptStates(state);
  });
}

const literal = (state: KeptState) => `'${state}'`;
