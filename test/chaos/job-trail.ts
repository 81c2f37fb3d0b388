/**
 * One job's story in a chaos run, for a failure to explain itself: every record the workers logged about it,
 * the faults injected while it was in play, and how the store left it, in time order.
 */
import type { JobRecord } from '@workq/core/engine';
import type { FaultEvent } from './analysis.ts';
import type { RunLogRecord } from './run-log.ts';

/** Records that name a job. */
type JobLogRecord = Exclude<RunLogRecord, { k: 'error' }>;

/** The longest trail told; a longer one keeps its first entries and says how many it left out. */
const MAX_ENTRIES = 40;

/** Tells the trail of any job of a run, times in seconds from `origin` (epoch ms). */
export function jobTrails(input: {
  records: readonly RunLogRecord[];
  faults: readonly FaultEvent[];
  stored: ReadonlyMap<string, JobRecord>;
  leaseMs: number;
  origin: number;
}): (id: string) => string {
  const byJob = new Map<string, JobLogRecord[]>();
  for (const record of input.records) {
    if (record.k === 'error') continue;
    const list = byJob.get(record.id);
    if (list) list.push(record);
    else byJob.set(record.id, [record]);
  }
  const at = (t: number) => `+${((t - input.origin) / 1000).toFixed(3)}s`;
  return (id) => {
    const own = [...(byJob.get(id) ?? [])].sort((a, b) => a.t - b.t);
    const entries: { t: number; text: string }[] = own.map((record) => ({ t: record.t, text: describe(record) }));
    const first = own[0];
    const last = own[own.length - 1];
    if (first && last) {
      // Faults from a lease before the job's first record to a second after its last: those that could touch it.
      for (const fault of input.faults) {
        if (fault.at > last.t + 1_000 || fault.until < first.t - input.leaseMs) continue;
        entries.push({ t: fault.at, text: `${fault.kind} ${fault.target} until ${at(fault.until)}` });
      }
    }
    entries.sort((a, b) => a.t - b.t);
    const told = entries.slice(0, MAX_ENTRIES).map((entry) => `${at(entry.t)} ${entry.text}`);
    if (entries.length > MAX_ENTRIES) told.push(`… ${entries.length - MAX_ENTRIES} more`);
    const job = input.stored.get(id);
    const result = job?.result as { attempt?: number; pid?: number } | null | undefined;
    const kept = job
      ? `store: ${job.state}, attempts ${job.attempts}, lease ${short(job.leaseToken)}` +
        (result?.attempt === undefined ? '' : `, result of attempt ${result.attempt} (pid ${result.pid})`)
      : 'store: missing';
    return `[${[...told, kept].join('; ')}]`;
  };
}

function describe(record: JobLogRecord): string {
  switch (record.k) {
    case 'claim':
      return `claim a${record.a} ${short(record.tok)} pid ${record.pid}`;
    case 'start':
    case 'end':
      return `${record.k} a${record.a} pid ${record.pid}`;
    case 'ack':
      return `ack ${short(record.tok)} ${record.ok ? 'ok' : 'refused'} pid ${record.pid}`;
    case 'extend-lost':
      return `extend refused ${short(record.tok)} pid ${record.pid}`;
  }
}

/** A lease token's last characters, random ones (it may begin with its claim time): enough to tell leases apart. */
function short(token: string | null): string {
  return token === null ? 'none' : token.slice(-8);
}
