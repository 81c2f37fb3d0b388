import { v7 as uuidv7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { WorkqError } from './errors.ts';
import { checkJobId, newJobId } from './job-ids.ts';

describe('checkJobId', () => {
  it('takes a UUID of any version in its 36-character form, in lower case', () => {
    const v7 = newJobId();
    expect(checkJobId(v7)).toBe(v7);
    expect(checkJobId('0190A8C4-3F2E-4C1A-9B6D-2F4E5A6B7C8D')).toBe('0190a8c4-3f2e-4c1a-9b6d-2f4e5a6b7c8d');
    expect(checkJobId(undefined)).toBeNull();
  });

  it('refuses anything else with VALIDATION, saying what an id is and how to make one', () => {
    const refused = ['', 'order-42', '0190a8c43f2e4c1a9b6d2f4e5a6b7c8d', `{${newJobId()}}`, ` ${newJobId()}`, 42, {}];
    for (const id of refused) {
      let error: unknown;
      try {
        checkJobId(id);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(WorkqError);
      expect(error).toMatchObject({
        code: 'VALIDATION',
        message: expect.stringMatching(/^id must be a UUID.*randomUUID/),
      });
    }
    expect(() => checkJobId('x'.repeat(10_000))).toThrow(/a string of 10000 characters/);
  });
});

describe('newJobId', () => {
  it('lays out its time, version, sequence and variant as the uuid package lays out a UUIDv7', () => {
    // Past a refill of the pool of random bytes (256 ids).
    const ids = Array.from({ length: 600 }, () => newJobId());
    const parts = ids.map((id) => {
      const hex = id.replace(/-/g, '');
      const bytes = Uint8Array.from(Buffer.from(hex, 'hex'));
      const msecs = Number.parseInt(hex.slice(0, 12), 16);
      const [b6 = 0, b7 = 0, b8 = 0, b9 = 0, b10 = 0] = bytes.subarray(6, 11);
      const seq = ((b6 & 0x0f) << 28) | (b7 << 20) | ((b8 & 0x3f) << 14) | (b9 << 6) | (b10 >>> 2);
      expect(uuidv7({ random: bytes, msecs, seq })).toBe(id);
      return { msecs, seq };
    });
    // Within one millisecond the sequence counts up by one.
    parts.forEach((part, i) => {
      const before = parts[i - 1];
      if (before?.msecs === part.msecs) expect(part.seq).toBe((before.seq + 1) | 0);
    });
  });
});
