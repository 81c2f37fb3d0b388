/**
 * The scopes a token may carry, static or signed:
 * - `produce:<job|*>`: enqueue jobs of that type, read their status, cancel them;
 * - `consume:<job|*>`: claim jobs of that type and hold their leases;
 * - `register:<job|*>`: register new payload schema versions of that type (never give it to a browser);
 * - `admin`: everything, every type.
 */
export type ScopeKind = 'produce' | 'consume' | 'register';

/** One scope as written: `admin`, or a kind and a job name (or `*`). */
const SCOPE = /^(admin|(produce|consume|register):\S+)$/;

/** Whether `scope` is written as a scope this server knows. */
export function isKnownScope(scope: string): boolean {
  return SCOPE.test(scope);
}
