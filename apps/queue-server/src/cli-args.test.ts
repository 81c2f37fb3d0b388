import { describe, expect, it } from 'vitest';
import { parseServerArgs } from './cli-args.ts';

describe('the signed-token flags', () => {
  it.each([
    ['24h', 86_400_000],
    ['30m', 1_800_000],
    ['90s', 90_000],
    ['7d', 604_800_000],
    ['1500ms', 1_500],
    ['600000', 600_000],
  ])('reads --max-token-lifetime %s as %i ms', (value, ms) => {
    expect(parseServerArgs(['--max-token-lifetime', value], {})).toMatchObject({ maxTokenLifetimeMs: ms });
  });

  it('reads them from WORKQ_* variables, and lets flags win', () => {
    const env = {
      WORKQ_MAX_TOKEN_LIFETIME: '2h',
      WORKQ_TOKEN_AUDIENCE: 'workq',
      WORKQ_TOKEN_ISSUER: 'https://app.example.com',
    };
    expect(parseServerArgs([], env)).toMatchObject({
      maxTokenLifetimeMs: 7_200_000,
      tokenAudience: 'workq',
      tokenIssuer: 'https://app.example.com',
    });
    expect(
      parseServerArgs(['--max-token-lifetime', '15m', '--token-audience', 'queue', '--token-issuer', 'me'], env),
    ).toMatchObject({ maxTokenLifetimeMs: 900_000, tokenAudience: 'queue', tokenIssuer: 'me' });
    expect(parseServerArgs([], {})).not.toHaveProperty('maxTokenLifetimeMs');
  });

  it.each(['0', '0h', '1.5h', '24 hours', '-1h', 'h', '99999999999999999d'])(
    'refuses --max-token-lifetime %j',
    (value) => {
      expect(() => parseServerArgs([], { WORKQ_MAX_TOKEN_LIFETIME: value })).toThrow(
        /max-token-lifetime must be a positive span/,
      );
    },
  );
});

describe('the event-stream and result flags', () => {
  it('reads --max-event-streams and --max-event-streams-per-token, and their WORKQ_* variables', () => {
    expect(parseServerArgs(['--max-event-streams', '200', '--max-event-streams-per-token', '8'], {})).toMatchObject({
      limits: { maxEventStreams: 200, maxEventStreamsPerToken: 8 },
    });
    expect(
      parseServerArgs([], {
        WORKQ_MAX_EVENT_STREAMS: '50',
        WORKQ_MAX_EVENT_STREAMS_PER_TOKEN: '4',
        WORKQ_MAX_RESULT_BYTES: '9',
      }),
    ).toMatchObject({ limits: { maxEventStreams: 50, maxEventStreamsPerToken: 4, maxResultBytes: 9 } });
  });
});
