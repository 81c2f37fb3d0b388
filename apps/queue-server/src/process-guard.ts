import type { Logger } from './options.ts';
import { currentRequest, requestFields } from './request-context.ts';

/**
 * The process-level guard every running server shares: installed by the
 * first `startServer` of a process, removed when the last of its servers
 * closes, whatever the number in between.
 *
 * - **An unhandled rejection is logged and the process keeps serving.** A
 *   rejection nobody awaited has already unwound through its async function,
 *   so it leaves no half-done synchronous state behind; Node's default (exit
 *   on the first one) would let one request's forgotten promise end every
 *   other request and worker lease on the server. The line names the request
 *   whose async work it came from (id, method, path, subject), and goes to
 *   that request's server's logger.
 * - **An uncaught exception is logged with its request, and Node's own
 *   handling goes on** (through `uncaughtExceptionMonitor`, which observes
 *   without handling): the process still exits, as it would without the
 *   guard. An exception thrown out of a callback can leave any object it was
 *   changing torn half-way, and Node documents resuming after one as unsafe;
 *   a supervisor's restart is the honest recovery there.
 *
 * While any server runs, this covers the whole process: an application that
 * embeds the server has its own stray rejections logged (without a request)
 * instead of ending the process.
 */
const loggers: Logger[] = [];

function describe(reason: unknown): Record<string, unknown> {
  if (reason instanceof Error) return { error: String(reason), stack: reason.stack };
  return { error: String(reason) };
}

function onUnhandledRejection(reason: unknown): void {
  const request = currentRequest();
  const logger = request?.logger ?? loggers[0];
  logger?.error('unhandled rejection; the server keeps serving', { ...requestFields(request), ...describe(reason) });
}

function onUncaughtException(error: unknown, origin: string): void {
  // A rejection reaches here only when no `unhandledRejection` listener took it, which the guard's own does.
  if (origin === 'unhandledRejection') return;
  const request = currentRequest();
  const logger = request?.logger ?? loggers[0];
  logger?.error('uncaught exception', { ...requestFields(request), ...describe(error) });
}

/** Adds one server's logger to the guard, installing it first if none was; the returned function removes it (once). */
export function guardProcess(logger: Logger): () => void {
  loggers.push(logger);
  if (loggers.length === 1) {
    process.on('unhandledRejection', onUnhandledRejection);
    process.on('uncaughtExceptionMonitor', onUncaughtException);
  }
  let removed = false;
  return () => {
    if (removed) return;
    removed = true;
    loggers.splice(loggers.indexOf(logger), 1);
    if (loggers.length === 0) {
      process.off('unhandledRejection', onUnhandledRejection);
      process.off('uncaughtExceptionMonitor', onUncaughtException);
    }
  };
}
