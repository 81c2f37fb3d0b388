import type { Logger } from './options.ts';
import { type RequestRecord, requestFields } from './request-context.ts';

/**
 * The audit trail, as structured log lines with `audit` set: one line for
 * each admin action, and one for each request refused for who sent it. A
 * line names the caller (a signed token's subject, when it has one), what
 * was done or tried, and from where; never a token or a secret, never a
 * payload.
 */

/** What an admin action acted on, e.g. `imageConvert` or `job 0193…`: never a payload. */
export function targetOf(input: unknown): string | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const { name, id, key, ids, version } = input as Record<string, unknown>;
  if (Array.isArray(ids)) return `${ids.length} job(s)`;
  if (typeof id === 'string') return `job ${id}`;
  if (typeof key === 'string') return `schedule ${key}`;
  if (typeof name === 'string') return typeof version === 'number' ? `${name} v${version}` : name;
  return undefined;
}

/** One admin action (`admin.pause imageConvert`), whether it succeeded (`outcome: 'ok'`) or failed (its error code). */
export function logAdminAction(
  logger: Logger,
  request: RequestRecord | undefined,
  entry: { action: string; target: string | undefined; outcome: string },
): void {
  logger.info(`${entry.action}${entry.target === undefined ? '' : ` ${entry.target}`}`, {
    audit: 'admin-action',
    ...requestFields(request),
    action: entry.action,
    ...(entry.target === undefined ? {} : { target: entry.target }),
    outcome: entry.outcome,
  });
}

/**
 * What an auth failure's line says of it: the first sentence of the message
 * the caller got (it names a missing scope or why a signed token was
 * refused, never the token; the advice after it is for the caller), or,
 * when no token came at all, just that.
 */
export function refusalDetail(message: string, authorization: string | undefined): string {
  if (authorization === undefined || authorization === '') return 'no bearer token sent';
  return message.split(/(?<=\.)\s/)[0] ?? message;
}

/**
 * One request refused for who sent it: `reason` is a code (`UNAUTHORIZED`,
 * `FORBIDDEN`, `host-not-allowed`, `origin-not-allowed`); `detail` the
 * message the caller got, which names a missing scope but never a token.
 */
export function logAuthFailure(
  logger: Logger,
  request: RequestRecord | undefined,
  entry: { action: string; reason: string; detail: string },
): void {
  logger.warn(`refused ${entry.action}: ${entry.reason}`, {
    audit: 'auth-failure',
    ...requestFields(request),
    action: entry.action,
    reason: entry.reason,
    detail: entry.detail,
  });
}
