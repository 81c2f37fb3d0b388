import { RE2JS } from 're2js';
import { backtrackingConstructOf } from '../contract/backtracking-patterns.ts';

/**
 * Most instructions the linear-time engine's program of one registered
 * pattern may have. Matching costs up to (text length × instructions), so
 * this bounds the work of one pattern on one string; RE2 itself refuses
 * repetition counts above 1,000, and the longest pattern Zod emits (IPv6
 * with a prefix length) compiles to about 710.
 */
export const MAX_PATTERN_INSTRUCTIONS = 1_000;

/** Compiled patterns kept for reuse (the check, then Ajv, compile each pattern of a schema), least recently used out first. */
const CACHED_PATTERNS = 256;
const compiledPatterns = new Map<string, RE2JS>();

/** `pattern` compiled by RE2JS (throws what RE2JS throws), from the cache when it is there. */
function compileCached(pattern: string): RE2JS {
  const cached = compiledPatterns.get(pattern);
  if (cached) {
    compiledPatterns.delete(pattern);
    compiledPatterns.set(pattern, cached);
    return cached;
  }
  const compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
  compiledPatterns.set(pattern, compiled);
  if (compiledPatterns.size > CACHED_PATTERNS) compiledPatterns.delete(compiledPatterns.keys().next().value as string);
  return compiled;
}

/** The regular-expression interface Ajv asks of its `code.regExp` engine. */
export interface RegExpEngine {
  (pattern: string, flags: string): { test: (text: string) => boolean };
  code: string;
}

/**
 * Why a registered `pattern` cannot run here, in a sentence (`problem`), or
 * how many instructions its program has when it can: it must be a valid
 * ECMAScript (`u`) pattern, as JSON Schema defines it, and compile on RE2's
 * linear-time engine within `MAX_PATTERN_INSTRUCTIONS`. Backreferences and
 * lookaround have no linear-time implementation and are named as such.
 */
export function checkLinearPattern(pattern: string): { problem: string } | { instructions: number } {
  const problem = linearPatternProblem(pattern);
  return problem === undefined ? { instructions: compileCached(pattern).re2Input.prog.numInst() } : { problem };
}

function linearPatternProblem(pattern: string): string | undefined {
  const construct = backtrackingConstructOf(pattern);
  if (construct) {
    return `uses ${construct}, which needs a backtracking engine (it can take exponential time); express it without one`;
  }
  try {
    new RegExp(pattern, 'u');
  } catch {
    return 'is not a valid ECMAScript regular expression (with the u flag), as JSON Schema requires';
  }
  let compiled: RE2JS;
  try {
    compiled = compileCached(pattern);
  } catch (error) {
    return `is not supported by the linear-time engine (${error instanceof Error ? error.message : String(error)})`;
  }
  const instructions = compiled.re2Input.prog.numInst();
  if (instructions > MAX_PATTERN_INSTRUCTIONS) {
    return `compiles to ${instructions} instructions, more than ${MAX_PATTERN_INSTRUCTIONS}: use smaller repetition counts`;
  }
  return undefined;
}

/**
 * Ajv's `code.regExp`: every `pattern` and `patternProperties` key runs on
 * RE2JS, a linear-time engine, instead of the backtracking `RegExp`, so no
 * text can make a registered pattern hold the event loop. Only patterns
 * `linearPatternProblem` accepts reach it; the flags Ajv passes (`u`) are
 * RE2's default.
 */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string, _flags: string) => {
    const compiled = compileCached(pattern);
    // Ajv keys its compiled patterns by `toString()`: each pattern must name itself.
    return { test: (text: string) => compiled.test(text), toString: () => `re2js:${pattern}` };
  },
  { code: 'linearRegExp' },
);
