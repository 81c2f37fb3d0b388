/** The longest message a failed attempt sends; the server keeps as much. */
export const MAX_ERROR_MESSAGE = 4_000;

/** The longest stack a failed attempt sends, cut at a line end; the server keeps as much. */
export const MAX_ERROR_STACK = 4_096;

/** A failed attempt's error as it is sent to the server: what a person needs to find the bug. */
export interface AttemptError {
  message: string;
  /** The error's class, e.g. `TypeError`, `PermanentError`; absent when a non-`Error` was thrown. */
  errorName?: string;
  /** The handler's stack, runtime-internal frames left out, at most `MAX_ERROR_STACK` characters. */
  stack?: string;
}

/** Frames of the runtime itself, which say nothing about the handler. */
const INTERNAL_FRAME =
  /^\s*at .*\((node:internal|node:async_hooks)|^\s*at (node:internal|process\.processTicksAndRejections)/;

/** What a handler threw, as its failed attempt is recorded. */
export function describeThrown(thrown: unknown): AttemptError {
  if (!(thrown instanceof Error)) return { message: String(thrown).slice(0, MAX_ERROR_MESSAGE) };
  const described: AttemptError = {
    message: String(thrown.message).slice(0, MAX_ERROR_MESSAGE),
    errorName: String(thrown.name).slice(0, 200),
  };
  if (typeof thrown.stack === 'string') described.stack = trimStack(thrown.stack);
  return described;
}

/** `stack` without the runtime's own frames, cut at the last whole line within `MAX_ERROR_STACK`. */
export function trimStack(stack: string): string {
  const lines = stack.split('\n').filter((line) => !INTERNAL_FRAME.test(line));
  let kept = '';
  for (const line of lines) {
    const next = kept === '' ? line : `${kept}\n${line}`;
    if (next.length > MAX_ERROR_STACK) return kept === '' ? line.slice(0, MAX_ERROR_STACK) : kept;
    kept = next;
  }
  return kept;
}
