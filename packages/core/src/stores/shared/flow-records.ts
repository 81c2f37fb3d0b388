import type { JobRead, JobRecord, NewJob } from '../../engine/store.ts';
import type { ChildFailurePolicy, JobError } from '../../jobs.ts';
import { insertedRecord } from './inserted-record.ts';
import { isUnread, VALUE_COLUMNS } from './unread-columns.ts';

/**
 * The record a job of a flow has right after its insert (`FlowStore.insertFlow`, `waitForChildren`): what
 * `insertedRecord` says, with its parent link and policy, and, for a parent inserted with children,
 * `waiting-children` with its count of them.
 */
export function insertedFlowRecord(job: NewJob): JobRecord {
  const record = insertedRecord(job);
  const children = job.pendingChildren ?? 0;
  if (children > 0) record.state = 'waiting-children';
  return withFlowFields(record, {
    parentId: job.parentId ?? null,
    onFailure: job.onFailure ?? null,
    childCount: children,
    pendingChildren: children,
  });
}

/**
 * `record` with the flow fields a job has: a child's parent link and policy, a parent's counts. A job outside
 * flows gets none of them (absent: not a child, no children), so its record is what it was before flows.
 */
export function withFlowFields(
  record: JobRecord,
  flow: { parentId: string | null; onFailure: ChildFailurePolicy | null; childCount: number; pendingChildren: number },
): JobRecord {
  if (flow.parentId !== null) {
    record.parentId = flow.parentId;
    record.onFailure = flow.onFailure ?? 'fail-parent';
  }
  if (flow.childCount > 0) {
    record.childCount = flow.childCount;
    record.pendingChildren = flow.pendingChildren;
  }
  return record;
}

/** How many of `children` are direct children of `parentId`. */
export function directChildren(children: readonly NewJob[], parentId: string): number {
  return children.filter((child) => child.parentId === parentId).length;
}

/** A child whose end settles its parent (`FlowStore`, "A child's end"). */
export interface EndedChild {
  id: string;
  name: string;
  parentId: string;
  onFailure: ChildFailurePolicy;
  end: 'completed' | 'dead' | 'cancelled';
  /** Its last error (for a dead child, the one its end recorded); named in a failed parent's error. */
  error: JobError | null;
}

/** `ended` by parent id, each parent's children in the order given. */
export function byParent<T extends EndedChild>(ended: readonly T[]): Map<string, T[]> {
  const parents = new Map<string, T[]>();
  for (const child of ended) {
    const children = parents.get(child.parentId);
    if (children) children.push(child);
    else parents.set(child.parentId, [child]);
  }
  return parents;
}

/** The first of one parent's ended children that fails it: under `fail-parent`, ended dead or cancelled. */
export function failingChild<T extends EndedChild>(children: readonly T[]): T | undefined {
  return children.find((child) => child.end !== 'completed' && child.onFailure === 'fail-parent');
}

/** The stored values whose size a child brings to a page's bytes (`ChildrenPageQuery`): those `read` reads. */
export function childSizeColumns(read: JobRead): readonly string[] {
  return VALUE_COLUMNS.filter((column) => !isUnread(column, read));
}
