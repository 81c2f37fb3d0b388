import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LimitRefusalLog } from './limit-refusals.ts';

function recordingLogger() {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const push = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, info: push('info'), warn: push('warn'), error: push('error') };
}

describe('LimitRefusalLog', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('logs the first refusal at a limit with its request, then one count per window while they go on', () => {
    const logger = recordingLogger();
    const log = new LimitRefusalLog(logger, 1_000);
    log.refused('maxBodyBytesInFlight', { requestId: 'r1', status: 503 });
    for (let i = 2; i <= 500; i++) log.refused('maxBodyBytesInFlight', { requestId: `r${i}`, status: 503 });
    log.refused('maxEventStreams', { requestId: 's1', status: 503 });
    expect(logger.lines).toEqual([
      {
        level: 'warn',
        message: 'request refused at a server limit (maxBodyBytesInFlight)',
        fields: { requestId: 'r1', status: 503, limit: 'maxBodyBytesInFlight' },
      },
      {
        level: 'warn',
        message: 'request refused at a server limit (maxEventStreams)',
        fields: { requestId: 's1', status: 503, limit: 'maxEventStreams' },
      },
    ]);

    vi.advanceTimersByTime(1_000);
    expect(logger.lines.slice(2)).toEqual([
      {
        level: 'warn',
        message: '499 more request(s) refused at a server limit (maxBodyBytesInFlight)',
        fields: { limit: 'maxBodyBytesInFlight', refused: 499, windowMs: 1_000 },
      },
    ]);
    // The flood goes on: counted in the next window, logged at its end.
    log.refused('maxBodyBytesInFlight', { requestId: 'r501' });
    vi.advanceTimersByTime(1_000);
    expect(logger.lines.slice(3).map((line) => line.message)).toEqual([
      '1 more request(s) refused at a server limit (maxBodyBytesInFlight)',
    ]);
    // A quiet window closes it: the next refusal is logged with its request again.
    vi.advanceTimersByTime(1_000);
    log.refused('maxBodyBytesInFlight', { requestId: 'r502' });
    expect(logger.lines.at(-1)?.fields).toMatchObject({ requestId: 'r502' });
    expect(logger.lines.every((line) => line.level === 'warn')).toBe(true);
  });

  it('logs what it counted when the server closes, and nothing after', () => {
    const logger = recordingLogger();
    const log = new LimitRefusalLog(logger, 1_000);
    log.refused('maxEventStreams', {});
    log.refused('maxEventStreams', {});
    log.refused('maxEventStreams', {});
    log.close();
    expect(logger.lines.map((line) => line.message)).toEqual([
      'request refused at a server limit (maxEventStreams)',
      '2 more request(s) refused at a server limit (maxEventStreams)',
    ]);
    vi.advanceTimersByTime(5_000);
    expect(logger.lines).toHaveLength(2);
  });
});
