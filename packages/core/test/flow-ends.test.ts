import { describe, expect, it } from 'vitest';
import { type FlowReader, flowEnds } from '../src/engine/flow-ends.ts';
import { type ChildrenPageQuery, FLOW_CANCELLED_CODE } from '../src/engine/flow-store.ts';
import type { JobRecord } from '../src/engine/store.ts';
import { insertedRecord } from '../src/stores/shared/inserted-record.ts';
import { newJob } from './support/fixtures.ts';

const AT = new Date('2026-01-01T00:00:05.000Z');

/** A child of `parentId` cancelled with its flow at `AT`, or one that completed before. */
function child(parentId: string, n: number, cancelled: boolean): JobRecord {
  const job = insertedRecord(newJob('page', { payload: { n, text: 'x'.repeat(1_000) } }));
  if (!cancelled) return { ...job, parentId, state: 'completed', finishedAt: new Date(0) };
  const error = { message: 'Its flow was cancelled.', code: FLOW_CANCELLED_CODE, at: AT, attempt: 0 };
  return { ...job, parentId, state: 'cancelled', error, finishedAt: AT };
}

/**
 * A store's children as `FlowStore.listChildren` may page them with `maxBytes`: every page cut after two
 * children, however large its limit, as a page of large children is; their payloads left out when asked.
 */
function cuttingReader(children: readonly JobRecord[], asked: ChildrenPageQuery[]): FlowReader {
  return {
    getJob: async () => null,
    listChildren: async (_parentId, page) => {
      asked.push(page);
      const from = page.afterId === undefined ? 0 : children.findIndex((job) => job.id === page.afterId) + 1;
      const read = children.slice(from, from + Math.min(2, page.limit));
      return page.withoutPayload ? read.map((job) => ({ ...job, payload: null })) : read;
    },
  };
}

describe('flowEnds', () => {
  it('walks every page of a parent cut short by its bytes, and reads the cancelled children without payloads', async () => {
    const parentId = 'parent';
    const children = [false, true, false, true, true].map((cancelled, n) => child(parentId, n, cancelled));
    const asked: ChildrenPageQuery[] = [];
    const ends = await flowEnds(cuttingReader(children, asked), { id: parentId, childCount: 5 }, AT);
    expect(ends.cancelled.map((job) => job.id)).toEqual([children[1]!.id, children[3]!.id, children[4]!.id]);
    expect(ends.cancelled.every((job) => job.payload === null && job.name === 'page')).toBe(true);
    // Pages of 2, 2, 1, then the empty page that ends them, each with a byte bound.
    expect(asked).toHaveLength(4);
    expect(asked.every((page) => page.maxBytes !== undefined && page.maxBytes > 0 && page.withoutPayload)).toBe(true);
  });
});
