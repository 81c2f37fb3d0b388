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
