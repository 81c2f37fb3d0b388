import type {
  ChildrenPageQuery,
  ChildState,
  HeldChildrenPage,
  InsertOutcome,
  JobRecord,
  LeaseRef,
  NewJob,
} from '../../engine/store.ts';
import { insertedRecord } from '../shared/inserted-record.ts';
import { engineState } from '../shared/not-started.ts';
import type { SqlClient, SqlQueryable } from './connection.ts';
import { isTakenJobIdOrKey } from './errors.ts';
import { insertJobs, jobsByIds } from './insert-jobs.ts';
import {
  type ChildRow,
  type JobRow,
  toChildOutcome,
  toJobRecord,
  toJsonText,
  traceContextText,
  unlessAllNull,
} from './records.ts';
import { insertFlowJobsSql, insertFlowSql } from './sql/insert-flow-jobs.ts';
import { listChildrenByBytesSql, listChildrenSql, listChildStatesSql } from './sql/list-children.ts';
import { listHeldChildrenSql } from './sql/list-held-children.ts';
import { makeParentSql } from './sql/make-parent.ts';
import { waitForChildrenSql } from './sql/wait-for-children.ts';
import type { Statements } from './statements.ts';

/** The flow statements of one schema (quoted). */
export function buildFlowJobStatements(schema: string) {
  return {
    insertFlow: insertFlowSql(schema),
    insertFlowJobs: insertFlowJobsSql(schema),
    makeParent: makeParentSql(schema),
    waitForChildren: waitForChildrenSql(schema),
    listChildren: listChildrenSql(schema),
    listChildrenByBytes: listChildrenByBytesSql(schema),
    listChildrenWithoutPayload: listChildrenSql(schema, { withoutPayload: true }),
    listChildrenByBytesWithoutPayload: listChildrenByBytesSql(schema, { withoutPayload: true }),
    listChildStates: listChildStatesSql(schema),
    listHeldChildren: listHeldChildrenSql(schema),
  };
}

export type FlowJobStatements = ReturnType<typeof buildFlowJobStatements>;

/**
 * The names of the parents a statement's transaction made ready, from the `readied` text it selected (see
 * `READIED_SETTING`): none when it is empty or absent.
 */
export function readiedParents(rows: readonly { readied?: string | null }[]): string[] {
  const text = rows[0]?.readied;
  return text ? (JSON.parse(text) as string[]) : [];
}

/**
 * `FlowStore.insertFlow`: the whole flow in one statement (`insertFlowSql`), one round trip. When it inserted
 * nothing, or failed on an id or key another insert took meanwhile: the job holding the root's id is the answer,
 * `created: false`. With none, a root with a key goes in by `insertFlowStepwise` (which answers with the key's
 * holder); without a key, the failure stands (an id taken below the root), or, when nothing failed, the id's
 * holder went before it was read: `KeyHolderGone`, and the engine tries again.
 */
export async function insertFlow(
  client: SqlClient,
  sql: { jobs: Statements; flows: FlowJobStatements },
  jobs: readonly NewJob[],
): Promise<InsertOutcome> {
  const [root] = jobs;
  if (!root) throw new Error('insertFlow needs a root job.');
  let failure: unknown;
  try {
    const key = [
      root.idempotencyKey,
      root.idempotencyExpiresAt?.toISOString() ?? null,
      root.idempotencyUntilFinished ?? false,
    ];
    const [row] = await client.query<{ inserted: number }>(sql.flows.insertFlow, [...flowJobParams(jobs), ...key]);
    if ((row?.inserted ?? 0) > 0) return { job: flowRecord(root), created: true };
  } catch (error) {
    if (!isTakenJobIdOrKey(error)) throw error;
    failure = error;
  }
  const holder = (await jobsByIds(client, sql.jobs, [root.id])).get(root.id);
  if (holder) return { job: holder, created: false };
  if (root.idempotencyKey !== null) return insertFlowStepwise(client, sql, jobs);
  // An id taken below the root fails the flow; a root id whose holder went before it was read, the engine retries.
  if (failure !== undefined) throw failure;
  return { job: null, created: false };
}

/**
 * `FlowStore.insertFlow` for a root with an idempotency key, in one transaction: the root goes in first through
 * `insertJobs` (a key a retained job holds ends it there, with that job), then the jobs below it in one statement.
 */
async function insertFlowStepwise(
  client: SqlClient,
  sql: { jobs: Statements; flows: FlowJobStatements },
  jobs: readonly NewJob[],
): Promise<InsertOutcome> {
  const [root, ...below] = jobs as [NewJob, ...NewJob[]];
  return client.transaction(async (tx) => {
    const [outcome] = await insertJobs(tx, sql.jobs, [root]);
    if (!outcome?.created) return outcome ?? { job: null, created: false };
    if ((root.pendingChildren ?? 0) > 0) await tx.query(sql.flows.makeParent, [root.id, root.pendingChildren]);
    await insertFlowJobs(tx, sql.flows, below);
    return { job: flowRecord(root), created: true };
  });
}

/** `FlowStore.waitForChildren`: the held job parked (fenced) and its children inserted, in one statement. */
export async function waitForChildren(
  db: SqlQueryable,
  sql: FlowJobStatements,
  lease: LeaseRef,
  children: readonly NewJob[],
  now: Date,
): Promise<boolean> {
  const direct = children.filter((child) => child.parentId === lease.id).length;
  const params = [...flowJobParams(children), lease.id, lease.leaseToken, now, direct];
  const [row] = await db.query<{ parked: boolean }>(sql.waitForChildren, params);
  return row?.parked === true;
}

/** `FlowStore.listChildren`. */
export async function listChildren(
  db: SqlQueryable,
  sql: FlowJobStatements,
  parentId: string,
  page: ChildrenPageQuery,
): Promise<JobRecord[]> {
  if (page.limit <= 0) return [];
  const params = [parentId, page.afterId ?? null, page.limit];
  const bytes = pageBytes(page);
  const [whole, byBytes] = page.withoutPayload
    ? [sql.listChildrenWithoutPayload, sql.listChildrenByBytesWithoutPayload]
    : [sql.listChildren, sql.listChildrenByBytes];
  const rows = await (bytes === null ? db.query<JobRow>(whole, params) : db.query<JobRow>(byBytes, [...params, bytes]));
  return rows.map(toJobRecord);
}

/** `FlowStore.listChildStates`. */
export async function listChildStates(
  db: SqlQueryable,
  sql: FlowJobStatements,
  parentId: string,
  page: { afterId?: string; limit: number },
): Promise<ChildState[]> {
  if (page.limit <= 0) return [];
  const rows = await db.query<Pick<JobRow, 'id' | 'name' | 'state' | 'run_at'>>(sql.listChildStates, [
    parentId,
    page.afterId ?? null,
    page.limit,
  ]);
  return rows.map((row) => ({ id: row.id, name: row.name, state: engineState(row.state), runAt: row.run_at }));
}

/** `FlowStore.listHeldChildren`: `null` when the lease does not hold (no row at all). */
export async function listHeldChildren(
  db: SqlQueryable,
  sql: FlowJobStatements,
  lease: LeaseRef,
  page: ChildrenPageQuery,
  now: Date,
): Promise<HeldChildrenPage | null> {
  const limit = Math.max(0, Math.floor(page.limit));
  const params = [lease.id, lease.leaseToken, now, page.afterId ?? null, limit, pageBytes(page)];
  const rows = await db.query<ChildRow & { held: boolean; followed: boolean | null }>(sql.listHeldChildren, params);
  if (rows.length === 0) return null;
  const children = rows.filter((row) => row.id !== null);
  return { children: children.map(toChildOutcome), more: children.at(-1)?.followed === true };
}

/** A page's `maxBytes` as its statement takes it: a whole number of at least 1, or `null` for none. */
function pageBytes(page: ChildrenPageQuery): number | null {
  return page.maxBytes === undefined ? null : Math.max(1, Math.floor(page.maxBytes));
}

/** Inserts jobs of a flow (none with a key), in one statement. */
async function insertFlowJobs(db: SqlQueryable, sql: FlowJobStatements, jobs: readonly NewJob[]): Promise<void> {
  if (jobs.length === 0) return;
  await db.query(sql.insertFlowJobs, flowJobParams(jobs));
}

/**
 * The parameters $1…$18 of `insertFlowJobsSql` for `jobs`: one array per field, each value as text; a field
 * no job has (a replayed job, a trace context, a group, a time limit) as one `NULL` for the whole array.
 */
function flowJobParams(jobs: readonly NewJob[]): ((string | null)[] | null)[] {
  const column = (value: (job: NewJob) => string | null) => jobs.map(value);
  return [
    column((job) => job.id),
    column((job) => job.name),
    column((job) => String(job.version)),
    column((job) => toJsonText(job.payload)),
    column((job) => String(job.priority)),
    column((job) => job.order),
    column((job) => job.runAt.toISOString()),
    column((job) => job.createdAt.toISOString()),
    column((job) => String(job.maxAttempts)),
    column((job) => toJsonText(job.backoff)),
    column((job) => String(job.leaseMs)),
    unlessAllNull(jobs, (job) => job.replayOf),
    unlessAllNull(jobs, traceContextText),
    unlessAllNull(jobs, (job) => job.group ?? null),
    column((job) => job.parentId ?? null),
    column((job) => job.onFailure ?? null),
    column((job) => String(job.pendingChildren ?? 0)),
    unlessAllNull(jobs, (job) => (job.timeoutMs == null ? null : String(job.timeoutMs))),
  ];
}

/** The record of a flow's root right after its insert. */
function flowRecord(job: NewJob): JobRecord {
  const record = insertedRecord(job);
  const pending = job.pendingChildren ?? 0;
  if (pending > 0) record.state = 'waiting-children';
  return {
    ...record,
    parentId: job.parentId ?? null,
    onFailure: job.onFailure ?? null,
    childCount: pending,
    pendingChildren: pending,
  };
}
