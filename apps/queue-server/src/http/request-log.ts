import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../options.ts';
import { type RequestRecord, requestFields, requestIdOf, runInRequest } from '../request-context.ts';
import type { LimitRefusalLog } from './limit-refusals.ts';

/** Paths whose 5xx is an answer, not a failure: `/readyz` says 503 while the store is away. */
const NOT_LOGGED_5XX: ReadonlySet<string> = new Set(['/readyz']);

/**
 * Serves one request inside its request record (request-context.ts): the
 * answer carries the request's id as `x-request-id` — the caller's own when
 * well-formed, so one id follows it through a proxy's logs and ours — and,
 * once the answer is over, a request answered 5xx, or whose batch or event
 * stream carried a 5xx error, is logged exactly once, at `error`, with its
 * id, method, path, subject, status and the internal causes noted while it
 * ran (which never reach the client). A request refused at a server limit,
 * and nothing else, goes to `refusals` instead.
 */
export function serveInRequest(
  req: IncomingMessage,
  res: ServerResponse,
  logs: { logger: Logger; refusals: LimitRefusalLog },
  serve: (record: RequestRecord) => void,
): void {
  const { logger, refusals } = logs;
  const record: RequestRecord = {
    id: requestIdOf(req.headers['x-request-id']),
    method: req.method ?? 'GET',
    path: (req.url ?? '/').split('?')[0] ?? '/',
    remoteAddress: req.socket.remoteAddress ?? 'unknown',
    failures: [],
    logger,
  };
  res.setHeader('x-request-id', record.id);
  res.once('close', () => {
    const failed = res.statusCode >= 500 && !NOT_LOGGED_5XX.has(record.path);
    if (!failed && record.failures.length === 0) return;
    if (record.failures.length === 0 && record.refusedAt !== undefined) {
      refusals.refused(record.refusedAt, { ...requestFields(record), status: res.statusCode });
      return;
    }
    logger.error('request failed', {
      ...requestFields(record),
      status: res.statusCode,
      error: record.failures.join('; ') || `answered ${res.statusCode}`,
    });
  });
  runInRequest(record, () => serve(record));
}
