import type { WorkqError } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { checkPayloadSize } from './payloads.ts';

const sizeError = (run: () => void): WorkqError | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    return error as WorkqError;
  }
};

describe('the payload size limit', () => {
  it('accepts a payload of exactly maxPayloadBytes as stored and refuses one byte more, whatever its text escapes to', () => {
    const payloads = [{ n: 1 }, { text: 'é"\\\n\u0001'.repeat(100), list: [1.5, null, true] }];
    for (const payload of payloads) {
      const bytes = Buffer.byteLength(JSON.stringify(payload), 'utf8');
      expect(sizeError(() => checkPayloadSize(payload, bytes, 'sized'))).toBeUndefined();
      expect(sizeError(() => checkPayloadSize(payload, bytes - 1, 'sized'))?.code).toBe('PAYLOAD_TOO_LARGE');
    }
  });

  it('refuses text no store can keep, however small the payload', () => {
    expect(sizeError(() => checkPayloadSize({ text: 'a\u0000' }, 1024, 'sized'))?.code).toBe('VALIDATION');
    expect(sizeError(() => checkPayloadSize({ text: '\ud800' }, 1024, 'sized'))?.code).toBe('VALIDATION');
  });
});
