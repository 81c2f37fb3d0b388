import { MongoServerError } from 'mongodb';

/** The operators a partial filter takes on a field (MongoDB 6.0 on): comparisons, `$type`, `$in`, `$exists: true`. */
const FIELD_OPERATORS = new Set(['$eq', '$gt', '$gte', '$lt', '$lte', '$type', '$in', '$exists']);

function refusal(code: number, codeName: string, message: string): MongoServerError {
  return new MongoServerError({ message, code, codeName });
}

function notSupported(expression: string): MongoServerError {
  return refusal(67, 'CannotCreateIndex', `Expression not supported in partial index: ${expression}`);
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return Object.getPrototypeOf(value) === Object.prototype && keys.length > 0 && keys.every((k) => k.startsWith('$'));
}

/**
 * What the server answers a `partialFilterExpression` it refuses, or `null` for one it takes: it takes equality,
 * `$eq`, `$gt`, `$gte`, `$lt`, `$lte`, `$type`, `$in`, `$exists: true`, and `$and` and `$or` of those; anything
 * that negates (`$exists: false`, `$ne`, `$nin`, `$not`, `$nor`) or any other operator is CannotCreateIndex (67),
 * `$expr` is QueryFeatureNotAllowed (224), `$where` BadValue (2).
 */
export function partialFilterRefusal(filter: Record<string, unknown>): MongoServerError | null {
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' || key === '$or') {
      for (const branch of Array.isArray(value) ? value : []) {
        const refused = partialFilterRefusal(branch as Record<string, unknown>);
        if (refused) return refused;
      }
      continue;
    }
    if (key === '$expr') return refusal(224, 'QueryFeatureNotAllowed', '$expr is not allowed in this context');
    if (key === '$where') return refusal(2, 'BadValue', '$where is not allowed in this context');
    if (key.startsWith('$')) return notSupported(key);
    if (!isOperatorObject(value)) continue;
    for (const [operator, operand] of Object.entries(value)) {
      if (operator === '$exists' && !operand) return notSupported(`$not\n    ${key} exists\n`);
      if (['$ne', '$nin', '$not'].includes(operator)) return notSupported(`$not\n    ${key} ${operator}\n`);
      if (!FIELD_OPERATORS.has(operator)) return notSupported(`${key} ${operator}`);
    }
  }
  return null;
}
