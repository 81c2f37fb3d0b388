import { describe, expect, it } from 'vitest';
import { leaseClaimedAtMs, newJobId, newLeaseToken } from './ids.ts';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newJobId', () => {
  it('makes UUIDv7 ids that strictly ascend, also many within one millisecond and across pool refills', () => {
    const ids = Array.from({ length: 5000 }, () => newJobId());
    for (const id of ids) expect(id).toMatch(UUID_V7);
    for (let i = 1; i < ids.length; i++) expect((ids[i - 1] as string) < (ids[i] as string)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // The first 48 bits are the creation time in ms.
    const msOf = (id: string) => Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(Math.abs(msOf(ids[0] as string) - Date.now())).toBeLessThan(5_000);
  });
});

describe('newLeaseToken', () => {
  it('begins with the claim time it is given, which leaseClaimedAtMs reads back; a token without one reads null', () => {
    const claimedAt = new Date('2026-03-04T05:06:07.089Z');
    const token = newLeaseToken(claimedAt);
    expect(token.length).toBeLessThanOrEqual(64);
    expect(leaseClaimedAtMs(token)).toBe(claimedAt.getTime());
    expect(newLeaseToken(claimedAt)).not.toBe(token);
    expect(leaseClaimedAtMs(newLeaseToken())).toBeNull();
    expect(leaseClaimedAtMs('stale-token')).toBeNull();
  });
});
