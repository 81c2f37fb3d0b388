/**
 * The worker processes' run log: JSON lines, appended synchronously (so a
 * line is on disk before the process can be killed), one file per worker
 * process. The parent reads every file once the run is over.
 */
import { appendFileSync, readFileSync } from 'node:fs';

/** A job leased to this process: what the claim's answer carried. */
export interface ClaimRecord {
  k: 'claim';
  id: string;
  /** The attempt this lease is (1-based); with the job id it names the lease. */
  a: number;
  /** The lease's fencing token. */
  tok: string;
  seq: number;
  t: number;
  pid: number;
}

/** The handler started (`start`) or returned (`end`) one attempt of a job. */
export interface RunRecord {
  k: 'start' | 'end';
  id: string;
  a: number;
  seq: number;
  t: number;
  pid: number;
}

/** The server's answer to one completion: `ok` false is an ack refused because its lease was lost. */
export interface AckRecord {
  k: 'ack';
  id: string;
  tok: string;
  ok: boolean;
  t: number;
  pid: number;
}

/** A lease extension the server refused: the lease had been lost (expired while the worker was stopped). */
export interface ExtendLostRecord {
  k: 'extend-lost';
  id: string;
  tok: string;
  t: number;
  pid: number;
}

/** An error the SDK's worker reported through `onError` (`code` is the WorkqError code when there is one). */
export interface WorkerErrorRecord {
  k: 'error';
  code: string;
  message: string;
  t: number;
  pid: number;
}

export type RunLogRecord = ClaimRecord | RunRecord | AckRecord | ExtendLostRecord | WorkerErrorRecord;

/** Appends records to `file` in one write. */
export function appendRecords(file: string, records: readonly RunLogRecord[]): void {
  if (records.length === 0) return;
  appendFileSync(file, `${records.map((record) => JSON.stringify(record)).join('\n')}\n`);
}

/**
 * Every record of every file. A process killed mid-write can leave a torn last line; such lines are
 * counted, not parsed.
 */
export function readRecords(files: readonly string[]): { records: RunLogRecord[]; tornLines: number } {
  const records: RunLogRecord[] = [];
  let tornLines = 0;
  for (const file of files) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line === '') continue;
      try {
        records.push(JSON.parse(line) as RunLogRecord);
      } catch {
        tornLines++;
      }
    }
  }
  return { records, tornLines };
}
