import type { JobError } from '../jobs.ts';
import type { InsertOutcome, JobRead, JobRecord, LeaseRef, NewJob, StoredState } from './store-records.ts';

/**
 * A child as its parent's handler reads it (`FlowStore.listHeldChildren`): only the fields `ctx.children` and
 * `childResults` show, so a parent's thousand children cost no payloads, histories or settings.
 */
export interface ChildOutcome {
  id: string;
  name: string;
  state: StoredState;
  /** To tell a waiting child `scheduled` from `ready`. */
  runAt: Date;
  /** As `JobRecord.result` keeps it (`toStoredValue`'s encoding); `null` for none. */
  result: unknown;
  /** Its last error; `null` for none. */
  error: JobError | null;
  /** How many children it has had itself; 0 for none. */
  childCount: number;
}

/**
 * Which children a read returns: in enqueue order (by id), after `afterId` when given, at most `limit`; and, with
 * `maxBytes`, ending with the first child whose stored size brings the page's total to `maxBytes` or past it, so
 * a page of large results or payloads costs its reader about `maxBytes` however many children fit the limit. A
 * child's size is what it stores of its result and error, and for a full record of its payload and error history
 * too: the length of their JSON text in the SQL stores, the BSON size of its document as read in MongoDB. A page
 * holds at least one child when any is left. With `withoutPayload` (`JobRead`), each child's payload is left
 * unread (`null`) and counts nothing.
 */
export interface ChildrenPageQuery extends Pick<JobRead, 'withoutPayload'> {
  afterId?: string;
  limit: number;
  maxBytes?: number;
}

/** A child as a parent's status lists it (`FlowStore.listChildStates`): who it is and where it stands. */
export type ChildState = Pick<ChildOutcome, 'id' | 'name' | 'state' | 'runAt'>;

/** A page of a held parent's children (`FlowStore.listHeldChildren`), and whether more follow it. */
export interface HeldChildrenPage {
  children: ChildOutcome[];
  more: boolean;
}

/**
 * Flows' part of the storage contract: a parent that waits for its children. Operations of its own (inserting a
 * flow, parking a held job on new children, and reading a parent's children), and duties that the job operations
 * take on for jobs in flows (below).
 *
 * A parent with unfinished children is `waiting-children` (`pendingChildren > 0`): it holds no lease, and it is
 * kept where no claim reads, so claims cost nothing more for it (a partial index, or a state the claim index
 * leaves out). A child is a job with a `parentId` and an `onFailure` policy.
 *
 * **A child's end.** Every operation that ends a job (`completeJobs`, `failJob` to dead, `cancelJob`,
 * `moveJob`'s completion, `requeueExpiredLeases` to dead, and the cancellations below) settles its parent in
 * the same atomic step as the end itself (the same statement or transaction), when the parent is
 * `waiting-children`:
 * - completed, or dead or cancelled under `ignore` or `continue`: the parent's `pendingChildren` goes down by
 *   one; at 0, the parent becomes waiting (ready, or scheduled when its `runAt` is still ahead), in its place
 *   in the queue (run time and order key kept), exactly once however many children end at once, on however
 *   many connections;
 * - dead or cancelled under `fail-parent`: the parent goes dead at once (`finishedAt` the end's time), its error
 *   `childFailedError(child, …)` (also appended to its `errors`), and each of its unfinished descendants is
 *   cancelled as `cancelJob` cancels, with the error `FLOW_CANCELLED_CODE`; a parent that is itself a child then
 *   ends in turn, and settles its own parent.
 * A parent that is not `waiting-children` (it finished: a sibling failed it, or it was cancelled) is left as
 * it is. Jobs without a parent pay nothing measurable for this: no read, no write beyond their own.
 *
 * **Cancelling a parent** (`cancelJob` of a `waiting-children`, waiting or active job) cancels its unfinished
 * descendants in the same step, each with the error `FLOW_CANCELLED_CODE`; its completed children stay as
 * they are.
 *
 * **Retrying a dead child** (`retryDeadJobs`) whose parent is dead of a child (error code `CHILD_FAILED`)
 * revives the parent in the same step: every descendant of that parent cancelled with `FLOW_CANCELLED_CODE`
 * goes back to waiting (attempts reset, error kept), and each parent on the way (that parent included) is
 * `waiting-children` again with `pendingChildren` recounted as its children not ended, `finishedAt` cleared.
 *
 * The children of a parent are listed in enqueue order: the engine makes their ids ascending in that order,
 * so stores order them by id.
 */
export interface FlowStore {
  /**
   * Inserts a flow, all or nothing, in one atomic step: `jobs[0]` is its root, the jobs after it are its
   * descendants, parents before their children, each child's `parentId` naming a job earlier in `jobs` and
   * each parent's `pendingChildren` counting its direct children (such a parent is inserted `waiting-children`,
   * its `childCount` the same). When a job holds the root's id, nothing is inserted and that job is returned
   * with `created: false`, whatever it is (the engine tells whether it is the same job). Only the root may carry
   * an idempotency key, and no job a debounce key: when a retained job of the root's type holds its key, nothing
   * is inserted and that job is returned with `created: false` (or `KeyHolderGone`, as `insertJobs` answers; also
   * when the job holding the root's id went before it could be read). Otherwise every job is inserted, durable
   * before it resolves, and it resolves to the root's record, `created: true`. An insert that fails (a duplicate
   * id below the root, a lost connection) stores none of the jobs.
   */
  insertFlow(jobs: readonly NewJob[]): Promise<InsertOutcome>;

  /**
   * Fenced and atomic: the job `lease` holds ends its attempt without counting it (`attempts` down by one, no
   * error recorded), its lease ends (token, expiry and worker cleared), and it waits for `children`, which are
   * inserted in the same step: it becomes `waiting-children`, `pendingChildren` the number of its direct
   * children in `children` and `childCount` up by as many. `children` are ordered as `insertFlow`'s jobs after
   * the root: those whose `parentId` is the held job's id first among their siblings, parents before their
   * children; none carries an idempotency or debounce key. Resolves to whether the lease held; when it did
   * not, nothing changed and nothing was inserted.
   */
  waitForChildren(lease: LeaseRef, children: readonly NewJob[], now: Date): Promise<boolean>;

  /**
   * The children of `parentId` (direct ones only), a page as `page` says (`ChildrenPageQuery`): read through an
   * index on the parent, whatever the number of other jobs. A page cut by `maxBytes` may be shorter than
   * `limit` with more children after it.
   */
  listChildren(parentId: string, page: ChildrenPageQuery): Promise<JobRecord[]>;

  /**
   * The children of `parentId` as `listChildren` lists them (without `maxBytes`), each with only its
   * `ChildState` fields: what a parent's status shows of its first children, so it reads no payloads or results.
   */
  listChildStates(parentId: string, page: { afterId?: string; limit: number }): Promise<ChildState[]>;

  /**
   * Fenced read: the direct children of the job `lease` holds at `now`, a page as `listChildren` reads it, each
   * with only its `ChildOutcome` fields (its size is its result's and error's), and whether more children
   * follow the page. Resolves to `null` when the lease does not hold the job (expired, ended, or another token),
   * and then no child is returned. The lease and the children are read in one statement, or in reads that return
   * nothing when the lease did not hold; it writes nothing.
   */
  listHeldChildren(lease: LeaseRef, page: ChildrenPageQuery, now: Date): Promise<HeldChildrenPage | null>;

  /**
   * Calls `listener` with the names of the parents an operation of this store object made ready (their last
   * child ended through it), once that change is durable and before the operation resolves, so the engine can
   * announce them as it announces an enqueue (a name may repeat; none is said for a parent still scheduled).
   * Returns a function that removes the listener.
   */
  onParentsReady(listener: (names: readonly string[]) => void): () => void;
}

/** The error code of a parent that went dead because a child under `fail-parent` ended dead or cancelled. */
export const CHILD_FAILED_CODE = 'CHILD_FAILED';

/** The error code of a job cancelled because its parent (or an ancestor) was cancelled or went dead. */
export const FLOW_CANCELLED_CODE = 'FLOW_CANCELLED';

/**
 * The error a parent records when `child` (under `fail-parent`) ends `dead` or `cancelled` at `at`, in its
 * `attempt`-th attempt count (the parent's `attempts`). Every store writes this text, so the message names the
 * child the same way everywhere: `Child job <id> (<name>) ended dead: <its last error>`.
 */
export function childFailedError(
  child: Pick<JobRecord, 'id' | 'name' | 'error'>,
  end: 'dead' | 'cancelled',
  attempt: number,
  at: Date,
): JobError {
  const cause = child.error ? `: ${child.error.message}` : '';
  return {
    message: `Child job ${child.id} (${child.name}) ended ${end}${cause}`.slice(0, 4000),
    code: CHILD_FAILED_CODE,
    attempt,
    at,
  };
}

/** The error a job cancelled with its flow records (`FLOW_CANCELLED_CODE`); `parentId` is the job's parent. */
export function flowCancelledError(parentId: string, attempt: number, at: Date): JobError {
  return {
    message: `Cancelled with its flow: its parent ${parentId} was cancelled or went dead.`,
    code: FLOW_CANCELLED_CODE,
    attempt,
    at,
  };
}
