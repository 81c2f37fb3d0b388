import { ERROR_HISTORY_LIMITS } from '../../jobs.ts';

/**
 * An `UPDATE … SET errors = …` expression (the table aliased `j`): the job's
 * `errors` with `added` (a jsonb expression) appended, the oldest dropped
 * once `ERROR_HISTORY_LIMITS.attempts` are kept. A job stored before the
 * column existed starts it from its last `error`. Reads the row's old values,
 * as every expression of one PostgreSQL `SET` does.
 */
export function appendedErrorsSql(added: string): string {
  const current = `coalesce(j.errors, CASE WHEN j.error IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(j.error) END)`;
  return `(CASE WHEN jsonb_array_length(${current}) >= ${ERROR_HISTORY_LIMITS.attempts} THEN ${current} - 0 ELSE ${current} END) || jsonb_build_array(${added})`;
}
