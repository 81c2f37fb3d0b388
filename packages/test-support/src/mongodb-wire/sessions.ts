import type { Binary, Document } from 'bson';
import { wireError } from './errors.ts';
import type { ChangeEntry, PrimaryState, WriteOwner } from './primary.ts';

/** The server's default `transactionLifetimeLimitSeconds`: an older transaction is aborted. */
export const DEFAULT_TRANSACTION_LIFETIME_MS = 60_000;

/** A multi-document transaction: the documents it holds, how to undo its writes, and its changes for the oplog. */
export class Transaction implements WriteOwner {
  readonly locks = new Set<string>();
  readonly undo: (() => void)[] = [];
  readonly events: Omit<ChangeEntry, 'seq'>[] = [];
  state: 'inProgress' | 'committed' | 'aborted' = 'inProgress';
  readonly startedAt = Date.now();
  readonly finished: Promise<void>;
  private end = () => {};

  constructor(
    private readonly primary: PrimaryState,
    readonly txnNumber: number,
    readonly snapshotSeq: number,
  ) {
    this.finished = new Promise((resolve) => {
      this.end = resolve;
    });
    primary.views.opened(this);
  }

  /** The server aborts a transaction whose statement met a write conflict. */
  abortForConflict(): void {
    this.abort();
  }

  abort(): void {
    if (this.state !== 'inProgress') return;
    this.state = 'aborted';
    for (const step of this.undo.reverse()) step();
    this.primary.release(this, false);
    this.end();
  }

  commit(): void {
    if (this.state !== 'inProgress') return;
    this.state = 'committed';
    this.primary.release(this, true);
    this.end();
  }
}

/** What the server keeps of one logical session: its transaction, and the answers of its retryable writes. */
interface SessionRecord {
  txnNumber: number;
  transaction: Transaction | undefined;
  /** Answers of retryable writes by `txnNumber`, to answer a retry without running it twice. */
  answers: Map<number, Document>;
}

/** The key a logical session is known by: its `lsid.id` UUID. */
export function sessionKey(lsid: Document | undefined): string | undefined {
  const id = lsid?.id as Binary | undefined;
  return id ? Buffer.from(id.buffer).toString('hex') : undefined;
}

/** The logical sessions the primary knows, with their transactions and retryable-write answers. */
export class Sessions {
  private readonly records = new Map<string, SessionRecord>();

  constructor(
    private readonly primary: PrimaryState,
    private readonly lifetimeMs = DEFAULT_TRANSACTION_LIFETIME_MS,
  ) {}

  private record(key: string): SessionRecord {
    let record = this.records.get(key);
    if (!record) {
      record = { txnNumber: -1, transaction: undefined, answers: new Map() };
      this.records.set(key, record);
    }
    return record;
  }

  /**
   * The transaction a command runs in (`autocommit: false`), started by its
   * `startTransaction`; the server's refusals for a stale or unknown one, or
   * for options only the first statement may carry.
   */
  transactionFor(body: Document): Transaction | undefined {
    if (body.autocommit !== false) return undefined;
    const key = sessionKey(body.lsid);
    const txnNumber = Number(body.txnNumber);
    if (!key || !Number.isFinite(txnNumber)) {
      throw wireError(72, "'autocommit' field requires a transaction number to also be specified");
    }
    const record = this.record(key);
    const name = Object.keys(body)[0];
    if (txnNumber < record.txnNumber) {
      throw wireError(
        225,
        `Cannot start transaction ${txnNumber} on session because a newer transaction ${record.txnNumber} has already started`,
      );
    }
    if (body.startTransaction === true) {
      if (txnNumber === record.txnNumber)
        throw wireError(
          251,
          `Given transaction number ${txnNumber} does not match any in-progress transactions. The active transaction number is ${record.txnNumber}`,
        );
      record.transaction?.abort();
      record.txnNumber = txnNumber;
      record.transaction = new Transaction(this.primary, txnNumber, this.primary.lastSeq);
      return record.transaction;
    }
    const transaction = record.transaction;
    if (txnNumber !== record.txnNumber || !transaction) {
      throw wireError(251, `Given transaction number ${txnNumber} does not match any in-progress transactions.`);
    }
    if (body.readConcern !== undefined) {
      throw wireError(72, 'Only the first command in a transaction may specify a readConcern');
    }
    if (body.writeConcern !== undefined && name !== 'commitTransaction' && name !== 'abortTransaction') {
      throw wireError(72, 'Cannot set write concern after starting a transaction.');
    }
    if (transaction.state === 'aborted' && name !== 'abortTransaction') {
      throw wireError(251, `Transaction with { txnNumber: ${txnNumber} } has been aborted.`);
    }
    if (transaction.state === 'committed' && name !== 'commitTransaction') {
      throw wireError(256, `Transaction with { txnNumber: ${txnNumber} } has been committed.`);
    }
    return transaction;
  }

  /** The recorded answer of a retryable write already run under this `lsid` and `txnNumber`. */
  answered(body: Document): Document | undefined {
    const key = sessionKey(body.lsid);
    if (!key || body.txnNumber === undefined || body.autocommit === false) return undefined;
    const record = this.record(key);
    const txnNumber = Number(body.txnNumber);
    if (txnNumber < record.txnNumber && !record.answers.has(txnNumber)) {
      throw wireError(
        225,
        `Retryable write with txnNumber ${txnNumber} is prohibited on session because a newer retryable write with txnNumber ${record.txnNumber} has already started on this session.`,
      );
    }
    return record.answers.get(txnNumber);
  }

  /** Keeps a retryable write's answer for its retries. */
  remember(body: Document, answer: Document): void {
    const key = sessionKey(body.lsid);
    if (!key || body.txnNumber === undefined || body.autocommit === false) return;
    const record = this.record(key);
    const txnNumber = Number(body.txnNumber);
    if (txnNumber > record.txnNumber) {
      record.transaction?.abort();
      record.transaction = undefined;
      record.txnNumber = txnNumber;
      record.answers.clear();
    }
    record.answers.set(txnNumber, answer);
  }

  /** Aborts every transaction in progress (a step-down does). */
  abortAll(): void {
    for (const record of this.records.values()) record.transaction?.abort();
  }

  /** Aborts the transactions older than their lifetime (`transactionLifetimeLimitSeconds`), as the server's reaper does. */
  reap(now: number): void {
    for (const record of this.records.values()) {
      if (record.transaction && now - record.transaction.startedAt > this.lifetimeMs) record.transaction.abort();
    }
  }

  /** Ends sessions (`endSessions`): their transactions in progress are aborted. */
  end(lsids: Document[]): void {
    for (const lsid of lsids) {
      const key = sessionKey(lsid);
      if (!key) continue;
      this.records.get(key)?.transaction?.abort();
      this.records.delete(key);
    }
  }
}
