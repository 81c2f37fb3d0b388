import type { Logger } from '@workq/queue-server';

/** Collects server log lines instead of printing them, so tests can assert on them. */
export function collectingLogger(): Logger & {
  lines: { level: string; message: string; fields?: Record<string, unknown> }[];
} {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const push = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void lines.push({ level, message, fields });
  return { lines, info: push('info'), warn: push('warn'), error: push('error') };
}
