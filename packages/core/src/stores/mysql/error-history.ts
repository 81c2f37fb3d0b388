import { ERROR_HISTORY_LIMITS } from '../../jobs.ts';

/**
 * An `UPDATE … SET errors = …` expression: the job's `errors` with `added` (an expression of JSON text, e.g.
 * `?`) appended, the oldest dropped once `ERROR_HISTORY_LIMITS.attempts` are kept. A job stored before the
 * column existed starts it from its last `error`. MySQL and MariaDB apply a `SET` list left to right, each
 * assignment seeing those before it: this one goes before the one of `error`, so it reads the previous one.
 */
export function appendedErrorsSql(added: string): string {
  const current = `COALESCE(errors, IF(error IS NULL, JSON_ARRAY(), JSON_ARRAY(JSON_EXTRACT(error, '$'))))`;
  const room = `IF(JSON_LENGTH(${current}) >= ${ERROR_HISTORY_LIMITS.attempts}, JSON_REMOVE(${current}, '$[0]'), ${current})`;
  return `JSON_ARRAY_APPEND(${room}, '$', JSON_EXTRACT(${added}, '$'))`;
}
