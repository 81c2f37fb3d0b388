import { describe, expect, it } from 'vitest';
import { WorkqError } from '../../errors.ts';
import { withDeadlockRetry } from './errors.ts';
import { StrictOrderBroken } from './flow-control.ts';
import { KeyHolderVanished } from './sql/move-job.ts';

describe('withDeadlockRetry', () => {
  it.each([
    ['a vanished key holder', () => new KeyHolderVanished()],
    ['a refused strict group order', () => new StrictOrderBroken()],
  ])('passes %s on as it is, so the store answers it rather than failing', async (_, rolledBack) => {
    const thrown = rolledBack();
    let runs = 0;
    const outcome = withDeadlockRetry('127.0.0.1:3306', 'moveJob', async () => {
      runs++;
      throw thrown;
    });
    await expect(outcome).rejects.toBe(thrown);
    expect(runs).toBe(1);
  });

  it('classifies any other error as a WorkqError that names the operation', async () => {
    const outcome = withDeadlockRetry('127.0.0.1:3306', 'moveJob', async () => {
      throw new Error('something else');
    });
    await expect(outcome).rejects.toBeInstanceOf(WorkqError);
    await expect(outcome).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('moveJob') });
  });
});
