import { ObjectId } from 'mongodb';

type Doc = Record<string, unknown>;
/** A condition's verdict on a stored value: `undefined` where the value is not one it can judge. */
type Judge = (held: unknown) => boolean | undefined;

const RANGES: Record<string, (order: number) => boolean> = {
  $lt: (order) => order < 0,
  $lte: (order) => order <= 0,
  $gt: (order) => order > 0,
  $gte: (order) => order >= 0,
};

function isScalar(value: unknown): value is string | number | boolean {
  return ['string', 'number', 'boolean'].includes(typeof value) && !Number.isNaN(value);
}

/** The order of two values of one kind (numbers, strings or dates), or `undefined` for any other pair or a NaN. */
function order(held: unknown, bound: unknown): number | undefined {
  if (typeof held === 'string' && typeof bound === 'string') return held < bound ? -1 : held > bound ? 1 : 0;
  const times = held instanceof Date && bound instanceof Date ? held.getTime() - bound.getTime() : undefined;
  const numbers = typeof held === 'number' && typeof bound === 'number' ? held - bound : undefined;
  const compared = times ?? numbers;
  return compared === undefined || Number.isNaN(compared) ? undefined : compared;
}

/** The judge of one field's condition, or `undefined` when it is not an equality, `$in` or range of scalars. */
function judgeOf(condition: unknown): Judge | undefined {
  if (isScalar(condition)) return (held) => (isScalar(held) ? held === condition : undefined);
  if (condition === null || typeof condition !== 'object' || Array.isArray(condition)) return undefined;
  if (condition instanceof Date || condition instanceof ObjectId) return undefined;
  const judges: Judge[] = [];
  for (const [operator, operand] of Object.entries(condition)) {
    const range = RANGES[operator];
    if (operator === '$eq' && isScalar(operand)) {
      judges.push((held) => (isScalar(held) ? held === operand : undefined));
    } else if (operator === '$in' && Array.isArray(operand) && operand.every(isScalar)) {
      const values = new Set<unknown>(operand);
      judges.push((held) => (isScalar(held) ? values.has(held) : undefined));
    } else if (range && (isScalar(operand) || operand instanceof Date)) {
      judges.push((held) => {
        const compared = order(held, operand);
        return compared === undefined ? undefined : range(compared);
      });
    } else {
      return undefined;
    }
  }
  return judges.length === 0 ? undefined : (held) => judgeAll(judges, held);
}

function judgeAll(judges: Judge[], held: unknown): boolean | undefined {
  let verdict = true;
  for (const judge of judges) {
    const each = judge(held);
    if (each === undefined) return undefined;
    verdict &&= each;
  }
  return verdict;
}

/**
 * A quick verdict on a filter whose every condition is, on a top-level field, an equality, `$eq`, `$in` or
 * range (`$lt`, `$lte`, `$gt`, `$gte`) of strings, numbers, booleans or dates: `undefined` for any other
 * filter, and the function answers `undefined` for a document holding a value it does not judge (missing,
 * null, an array, a document, or of another kind than a range's bound), which the full query then decides.
 * Within its reach it answers as the full query does, at a fraction of the cost a document.
 */
export function scalarFilter(filter: Doc): ((doc: Doc) => boolean | undefined) | undefined {
  const fields: [string, Judge][] = [];
  for (const [field, condition] of Object.entries(filter)) {
    const judge = field.startsWith('$') || field.includes('.') ? undefined : judgeOf(condition);
    if (!judge) return undefined;
    fields.push([field, judge]);
  }
  return (doc) => {
    let verdict = true;
    for (const [field, judge] of fields) {
      const each = judge(doc[field]);
      if (each === undefined) return undefined;
      verdict &&= each;
    }
    return verdict;
  };
}
