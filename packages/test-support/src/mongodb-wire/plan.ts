import { isDeepStrictEqual } from 'node:util';
import { Query } from 'mingo';
import { MongoServerError, ObjectId } from 'mongodb';
import { type Doc, type IndexSpec, valueAt } from './data.ts';

/** How the double runs one query: through which index (or a collection scan), and at what cost. */
export interface QueryPlan {
  /** The index name, `'COLLSCAN'`, or `'EOF'` for a collection that does not exist. */
  index: string;
  /** Index keys examined (documents, for a collection scan), as `explain` counts `totalKeysExamined`. */
  examined: number;
  /** Whether the index returns the documents in the requested sort order (no in-memory sort). */
  sortedByIndex: boolean;
}

/** What a plan is made from: the query, and the collection's indexes with the documents each holds. */
export interface PlanInput {
  filter: Doc;
  sort?: Record<string, 1 | -1> | undefined;
  limit?: number | undefined;
  /** An index name, or an index key (as `findOneAndUpdate` takes it). */
  hint?: string | Record<string, 1 | -1> | undefined;
}

export interface PlannedIndex {
  spec: IndexSpec;
  /** The documents in the index: all of them, or those its partial filter admits. */
  entries: () => Doc[];
}

const RANGE_OPERATORS = ['$gt', '$gte', '$lt', '$lte'];

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || value instanceof Date || value instanceof ObjectId) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => key.startsWith('$'));
}

/** The top-level conditions of a filter by field, `$and` flattened; `$or` kept apart. */
function conditionsOf(filter: Doc): { fields: Map<string, unknown[]>; or: Doc[] | undefined } {
  const fields = new Map<string, unknown[]>();
  let or: Doc[] | undefined;
  const visit = (part: Doc) => {
    for (const [field, condition] of Object.entries(part)) {
      if (field === '$and') for (const child of condition as Doc[]) visit(child);
      else if (field === '$or') or = condition as Doc[];
      else if (!field.startsWith('$')) fields.set(field, [...(fields.get(field) ?? []), condition]);
    }
  };
  visit(filter);
  return { fields, or };
}

/** The branches a query planner plans one by one: each `$or` branch with the conditions around it. */
function branchesOf(filter: Doc): Doc[] {
  const { or } = conditionsOf(filter);
  if (!or) return [filter];
  const { $or: _or, ...rest } = filter;
  return or.map((branch) => ({ $and: [rest, branch] }));
}

/** Whether one condition on a field implies another, by the rules the double knows (equal, or contained). */
function conditionImplies(have: unknown, want: unknown): boolean {
  if (isDeepStrictEqual(have, want)) return true;
  if (!isOperatorObject(want)) {
    if (!isOperatorObject(have)) return false;
    const values = have.$in;
    return (
      isDeepStrictEqual(have.$eq, want) ||
      (Array.isArray(values) && values.length === 1 && isDeepStrictEqual(values[0], want))
    );
  }
  if (!isOperatorObject(have)) return want.$exists === true && have !== null && Object.keys(want).length === 1;
  return Object.entries(want).every(([operator, value]) => isDeepStrictEqual(have[operator], value));
}

/**
 * Whether a query can use a partial index: every branch of the query must
 * contain each condition of the index's partial filter (or a narrower one
 * the double recognises), as the server's subset rule requires. An equality
 * on a field does not imply a `$type` condition on it.
 */
export function impliesPartialFilter(filter: Doc, partialFilter: Doc): boolean {
  return branchesOf(filter).every((branch) => {
    const { fields } = conditionsOf(branch);
    return Object.entries(partialFilter).every(([field, want]) =>
      (fields.get(field) ?? []).some((have) => conditionImplies(have, want)),
    );
  });
}

/** Point values a condition pins a field to (`{ f: v }`, `$eq`, `$in`), or `undefined`. */
function pointsOf(conditions: unknown[]): unknown[] | undefined {
  for (const condition of conditions) {
    if (!isOperatorObject(condition)) return [condition];
    if ('$eq' in condition) return [condition.$eq];
    if (Array.isArray(condition.$in)) return condition.$in;
  }
  return undefined;
}

function rangeOf(conditions: unknown[]): Record<string, unknown> | undefined {
  const range: Record<string, unknown> = {};
  for (const condition of conditions) {
    if (!isOperatorObject(condition)) continue;
    for (const operator of RANGE_OPERATORS) if (operator in condition) range[operator] = condition[operator];
  }
  return Object.keys(range).length > 0 ? range : undefined;
}

const TYPE_RANK = (value: unknown): number => {
  if (value === null || value === undefined) return 0;
  if (typeof value === 'number') return 1;
  if (typeof value === 'string') return 2;
  if (value instanceof ObjectId) return 3;
  if (typeof value === 'boolean') return 4;
  if (value instanceof Date) return 5;
  return 6;
};

/** BSON comparison order, for the types the store keeps in indexed fields. */
export function compareValues(a: unknown, b: unknown): number {
  const rank = TYPE_RANK(a) - TYPE_RANK(b);
  if (rank !== 0) return rank;
  if (a instanceof Date && b instanceof Date) return a.getTime() - b.getTime();
  if (a instanceof ObjectId && b instanceof ObjectId) return a.toHexString().localeCompare(b.toHexString());
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return 0;
}

/** The cost of one branch through one index: bounds from its leading equalities, then the scan they allow. */
function scanBranch(index: PlannedIndex, branch: Doc, input: PlanInput): Omit<QueryPlan, 'index'> | null {
  const keys = Object.entries(index.spec.key);
  const { fields } = conditionsOf(branch);
  const bounds: Doc = {};
  let position = 0;
  for (; position < keys.length; position++) {
    const [field] = keys[position] as [string, 1 | -1];
    const points = pointsOf(fields.get(field) ?? []);
    if (!points) break;
    bounds[field] = { $in: points };
  }
  const pointFields = position;
  const rangeField = keys[position]?.[0];
  const range = rangeField === undefined ? undefined : rangeOf(fields.get(rangeField) ?? []);
  if (range && rangeField !== undefined) bounds[rangeField] = range;
  if (pointFields === 0 && !range && input.hint === undefined) return null; // the planner would not pick it
  const inBounds = new Query(bounds, {});
  const entries = index.entries().filter((doc) => inBounds.test(doc));

  const rest = keys.slice(pointFields);
  const sort = Object.entries(input.sort ?? {});
  const direction = sort.length > 0 && rest[0] ? sort[0]![1] * rest[0][1] : 1;
  const sortedByIndex =
    sort.length > 0 &&
    sort.length <= rest.length &&
    sort.every(([field, order], i) => rest[i]?.[0] === field && rest[i]?.[1] * order === direction);
  if (!sortedByIndex || !input.limit) return { examined: entries.length, sortedByIndex };

  // Sorted by the index with a limit: each run of equal leading values (merged, when a leading `$in` has
  // several) is read in key order until it has given `limit` matches.
  const matches = new Query(branch, {});
  const runs = new Map<string, Doc[]>();
  for (const doc of entries) {
    const run = JSON.stringify(keys.slice(0, pointFields).map(([field]) => valueAt(doc, field)));
    const docs = runs.get(run);
    if (docs) docs.push(doc);
    else runs.set(run, [doc]);
  }
  let examined = 0;
  for (const run of runs.values()) {
    run.sort((a, b) => {
      for (const [field, order] of rest) {
        const compared = compareValues(valueAt(a, field), valueAt(b, field));
        if (compared !== 0) return compared * order * direction;
      }
      return 0;
    });
    let found = 0;
    for (const doc of run) {
      examined += 1;
      if (matches.test(doc) && ++found === input.limit) break;
    }
  }
  return { examined, sortedByIndex };
}

function scan(index: PlannedIndex, input: PlanInput): QueryPlan | null {
  const branches = branchesOf(input.filter);
  if (index.spec.partialFilterExpression && !impliesPartialFilter(input.filter, index.spec.partialFilterExpression)) {
    return null;
  }
  let examined = 0;
  let sortedByIndex = branches.length === 1;
  for (const branch of branches) {
    const cost = scanBranch(index, branch, branches.length === 1 ? input : { ...input, sort: undefined });
    if (!cost) return null;
    examined += cost.examined;
    sortedByIndex &&= cost.sortedByIndex;
  }
  return { index: index.spec.name, examined, sortedByIndex };
}

/**
 * How the server would run a query. With a hint, through that index, or the
 * server's error when it does not exist or its partial filter is not implied
 * by the query. Without one, the cheapest index whose leading field the query
 * bounds, else a collection scan.
 */
export function planQuery(indexes: PlannedIndex[], documents: number, input: PlanInput): QueryPlan {
  // Ids named by the query are looked up by the `_id` index at once, as the server's fast path does.
  const ids = input.hint === undefined ? pointsOf(conditionsOf(input.filter).fields.get('_id') ?? []) : undefined;
  if (ids && !conditionsOf(input.filter).or) return { index: '_id_', examined: ids.length, sortedByIndex: false };
  if (input.hint !== undefined) {
    const { hint } = input;
    const index = indexes.find((candidate) =>
      typeof hint === 'string'
        ? candidate.spec.name === hint
        : isDeepStrictEqual(Object.entries(candidate.spec.key), Object.entries(hint)),
    );
    const plan = index ? scan(index, input) : null;
    if (!plan) {
      throw new MongoServerError({
        message: `error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index (${JSON.stringify(hint)})`,
        code: 2,
        codeName: 'BadValue',
      });
    }
    return plan;
  }
  let best: QueryPlan | null = null;
  for (const index of indexes) {
    const plan = scan(index, input);
    if (plan && (!best || plan.examined < best.examined)) best = plan;
  }
  return best ?? { index: 'COLLSCAN', examined: documents, sortedByIndex: false };
}
