import { describe, expect, it } from 'vitest';
import { type ClaimEvent, type ClaimState, nextClaimState } from './claim-states.ts';

const follow = (events: readonly ClaimEvent[]): ClaimState[] => {
  const states: ClaimState[] = ['starting'];
  for (const event of events) states.push(nextClaimState(states.at(-1) as ClaimState, event));
  return states;
};

describe('claim states', () => {
  it('answers from querying with what it found, or with nothing when it may not wait', () => {
    expect(follow(['started', 'found'])).toEqual(['starting', 'querying', 'answered']);
    expect(follow(['started', 'mayNotWait'])).toEqual(['starting', 'querying', 'answered']);
  });

  it('parks when it found nothing, queries again each time it is woken, and answers out of parked', () => {
    expect(follow(['started', 'foundNone', 'woken', 'foundNone', 'woken', 'found'])).toEqual([
      'starting',
      'querying',
      'parked',
      'querying',
      'parked',
      'querying',
      'answered',
    ]);
    for (const event of ['handedOver', 'stopped', 'leasesLost', 'clientGone'] as const) {
      expect(follow(['started', 'foundNone', event]).at(-1)).toBe('answered');
    }
  });

  it('refuses an event its state does not take: a handoff before parking, a wake-up while querying, anything once answered', () => {
    expect(() => nextClaimState('querying', 'handedOver')).toThrow('"handedOver" while querying');
    expect(() => nextClaimState('querying', 'woken')).toThrow();
    expect(() => nextClaimState('starting', 'found')).toThrow();
    expect(() => nextClaimState('parked', 'found')).toThrow();
    for (const event of ['started', 'found', 'woken', 'handedOver'] as const) {
      expect(() => nextClaimState('answered', event)).toThrow();
    }
  });
});
