import type { Document } from 'bson';

const NOW = '$$NOW';

function isPlainDocument(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** An aggregation expression with `$$NOW` replaced by `now`, as a literal; a `$literal` is left as it is. */
function boundExpression(expression: unknown, now: Date): unknown {
  if (expression === NOW) return { $literal: now };
  if (Array.isArray(expression)) return expression.map((item) => boundExpression(item, now));
  if (!isPlainDocument(expression) || '$literal' in expression) return expression;
  return Object.fromEntries(Object.entries(expression).map(([key, value]) => [key, boundExpression(value, now)]));
}

/** A query with `$$NOW` bound inside its `$expr`s: elsewhere in a query it is only a string. */
function boundFilter(filter: unknown, now: Date): unknown {
  if (!isPlainDocument(filter)) return filter;
  return Object.fromEntries(
    Object.entries(filter).map(([key, value]) => {
      if (key === '$expr') return [key, boundExpression(value, now)];
      if ((key === '$and' || key === '$or' || key === '$nor') && Array.isArray(value)) {
        return [key, value.map((branch) => boundFilter(branch, now))];
      }
      return [key, value];
    }),
  );
}

/** A pipeline with `$$NOW` bound: a `$match` stage as a query, any other stage as expressions. */
function boundPipeline(stages: unknown, now: Date): unknown {
  if (!Array.isArray(stages)) return stages;
  return stages.map((stage) =>
    isPlainDocument(stage) && stage.$match !== undefined
      ? { ...stage, $match: boundFilter(stage.$match, now) }
      : boundExpression(stage, now),
  );
}

/** An update's modification: a pipeline is bound, operators (where `$$NOW` is only a string) are not. */
function boundUpdate(update: unknown, now: Date): unknown {
  return Array.isArray(update) ? boundPipeline(update, now) : update;
}

/**
 * The command with `$$NOW` bound as the server binds it: one value for the
 * whole command, read off the primary's clock (`PrimaryState.now`, which
 * `clockOffsetMs` moves), in every query's `$expr` and every pipeline it
 * runs. mingo would read `$$NOW` off this process's clock at each
 * evaluation, so the double hands it the command's time as a literal. A
 * change stream's pipeline is left as it is.
 */
export function withDatabaseNow(name: string, body: Document, now: Date): Document {
  switch (name) {
    case 'find':
      return { ...body, filter: boundFilter(body.filter, now) };
    case 'count':
    case 'distinct':
      return { ...body, query: boundFilter(body.query, now) };
    case 'aggregate': {
      const first = (body.pipeline as Document[] | undefined)?.[0];
      return first?.$changeStream === undefined ? { ...body, pipeline: boundPipeline(body.pipeline, now) } : body;
    }
    case 'update':
      return {
        ...body,
        updates: (body.updates as Document[] | undefined)?.map((statement) => ({
          ...statement,
          q: boundFilter(statement.q, now),
          u: boundUpdate(statement.u, now),
        })),
      };
    case 'delete':
      return {
        ...body,
        deletes: (body.deletes as Document[] | undefined)?.map((statement) => ({
          ...statement,
          q: boundFilter(statement.q, now),
        })),
      };
    case 'findAndModify':
    case 'findandmodify':
      return { ...body, query: boundFilter(body.query, now), update: boundUpdate(body.update, now) };
    default:
      return body;
  }
}
