import { describe, expect, it } from 'vitest';
import { ClaimsInProgress, type StopScope } from './claims-in-progress.ts';

const open: StopScope = { covers: () => true };
const consumerOf = (...jobNames: string[]): StopScope => ({ covers: (name) => jobNames.includes(name) });

describe('ClaimsInProgress', () => {
  it('ends the waits of one worker’s claims in progress, and counts them', () => {
    const claims = new ClaimsInProgress();
    const [a1, a2, b] = [claims.begin('a', 'x'), claims.begin('a', 'x'), claims.begin('b', 'x')];
    a2.end();
    expect(claims.stopWaiting('a', open)).toBe(1);
    expect(a1.stop.aborted).toBe(true);
    expect(b.stop.aborted).toBe(false);
    expect(claims.stopWaiting('c', open)).toBe(0);
  });

  it('keeps a stopping worker’s claims that arrive afterwards from waiting, and no other’s', () => {
    const claims = new ClaimsInProgress();
    expect(claims.stopWaiting('a', open)).toBe(0);
    expect(claims.begin('a', 'x').stop.aborted).toBe(true);
    expect(claims.begin('b', 'x').stop.aborted).toBe(false);
  });

  it('touches only the job types the caller may consume, now and afterwards', () => {
    const claims = new ClaimsInProgress();
    const [x, y] = [claims.begin('a', 'x'), claims.begin('a', 'y')];
    expect(claims.stopWaiting('a', consumerOf('x'))).toBe(1);
    expect(x.stop.aborted).toBe(true);
    expect(y.stop.aborted).toBe(false);
    expect(claims.begin('a', 'x').stop.aborted).toBe(true);
    const laterY = claims.begin('a', 'y');
    expect(laterY.stop.aborted).toBe(false);
    // Another caller's request adds the job types it may consume, and takes none away.
    expect(claims.stopWaiting('a', consumerOf('y'))).toBe(2);
    expect([y.stop.aborted, laterY.stop.aborted]).toEqual([true, true]);
    expect(claims.begin('a', 'x').stop.aborted).toBe(true);
    expect(claims.begin('a', 'y').stop.aborted).toBe(true);
    expect(claims.begin('a', 'z').stop.aborted).toBe(false);
  });

  it('forgets a claim once it has answered', () => {
    const claims = new ClaimsInProgress();
    const claim = claims.begin('a', 'x');
    claim.end();
    claim.end();
    expect(claims.stopWaiting('a', open)).toBe(0);
  });
});
