import { describe, expect, it } from 'vitest';
import { ClaimsInProgress } from './claims-in-progress.ts';

describe('ClaimsInProgress', () => {
  it('ends the waits of one worker’s claims in progress, and counts them', () => {
    const claims = new ClaimsInProgress();
    const [a1, a2, b] = [claims.begin('a'), claims.begin('a'), claims.begin('b')];
    a2.end();
    expect(claims.stopWaiting('a')).toBe(1);
    expect(a1.stop.aborted).toBe(true);
    expect(b.stop.aborted).toBe(false);
    expect(claims.stopWaiting('c')).toBe(0);
  });

  it('keeps a stopping worker’s claims that arrive afterwards from waiting, and no other’s', () => {
    const claims = new ClaimsInProgress();
    expect(claims.stopWaiting('a')).toBe(0);
    expect(claims.begin('a').stop.aborted).toBe(true);
    expect(claims.begin('b').stop.aborted).toBe(false);
  });

  it('forgets a claim once it has answered', () => {
    const claims = new ClaimsInProgress();
    const claim = claims.begin('a');
    claim.end();
    claim.end();
    expect(claims.stopWaiting('a')).toBe(0);
  });
});
