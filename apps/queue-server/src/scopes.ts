import { isValidJobName } from '@workq/core';

/**
 * The scopes a token may carry, static or signed:
 * - `produce:<job|*>`: enqueue jobs of that type, read their status, cancel them;
 * - `consume:<job|*>`: claim jobs of that type and hold their leases;
 * - `register:<job|*>`: register new payload schema versions of that type (never give it to a browser);
 * - `admin`: everything, every type.
 */
export type ScopeKind = 'produce' | 'consume' | 'register';

/** One scope as written: `admin`, or a kind and a job name (or `*`). */
const SCOPE = /^(admin|(produce|consume|register):(.+))$/;

/**
 * Whether `scope` is written as a scope this server knows: exactly `admin`, or
 * a kind and `*` or a valid job name (`isValidJobName`), case and all, so
 * `Admin`, `produce:a,b` and `consume:` are not scopes.
 */
export function isKnownScope(scope: string): boolean {
  const job = SCOPE.exec(scope)?.[3];
  return scope === 'admin' || (job !== undefined && (job === '*' || isValidJobName(job)));
}
