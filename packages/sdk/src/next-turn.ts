/** Runs `fn` once the current turn's callbacks and promise continuations have all run (Node and browsers). */
export const nextTurn: (fn: () => void) => void =
  typeof setImmediate === 'function' ? (fn) => setImmediate(fn) : (fn) => setTimeout(fn, 0);
