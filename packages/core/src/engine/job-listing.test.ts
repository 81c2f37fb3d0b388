import { describe, expect, it } from 'vitest';
import { firstIdAt, newJobId } from './ids.ts';
import { listFilter } from './job-listing.ts';

const NOW = new Date('2026-01-01T00:00:00.000Z');

describe('listFilter', () => {
  it('turns a creation time range into id bounds that keep exactly the jobs created within it', () => {
    const id = newJobId();
    const created = Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
    const { filter } = listFilter({ createdFrom: new Date(created), createdTo: new Date(created) }, NOW);
    expect(filter.afterId! < id && id < filter.beforeId!).toBe(true);
    const later = listFilter({ createdFrom: new Date(created + 1) }, NOW).filter;
    expect(later.afterId! > id).toBe(true);
    const earlier = listFilter({ createdTo: new Date(created - 1) }, NOW).filter;
    expect(earlier.beforeId! < id).toBe(true);
  });

  it('newest first, pages below the cursor, and the tighter of the cursor and the range end bounds it', () => {
    const cursor = firstIdAt(2_000);
    expect(listFilter({ newestFirst: true, cursor }, NOW).filter).toMatchObject({
      newestFirst: true,
      beforeId: cursor,
    });
    const tighter = listFilter({ newestFirst: true, cursor, createdTo: new Date(1_000) }, NOW).filter;
    expect(tighter.beforeId).toBe(firstIdAt(1_001));
    const looser = listFilter({ newestFirst: true, cursor, createdTo: new Date(5_000) }, NOW).filter;
    expect(looser.beforeId).toBe(cursor);
    const oldest = listFilter({ cursor, createdFrom: new Date(5_000) }, NOW).filter;
    expect(oldest).toMatchObject({ afterId: firstIdAt(5_000) });
    expect(oldest.newestFirst).toBeUndefined();
  });

  it('passes version, group, id and idempotency key through to the store', () => {
    const { filter, limit } = listFilter({ version: 2, group: 'g', id: 'x', idempotencyKey: 'k', limit: 50 }, NOW);
    expect(filter).toMatchObject({ version: 2, group: 'g', ids: ['x'], idempotencyKey: 'k', limit: 51 });
    expect(limit).toBe(50);
  });
});
