/**
 * The registries a store keeps beside the jobs: the payload schemas
 * registered per job version, and the consumers seen (who reads what, from
 * which host). Separate from the job operations, which never touch them.
 */
export interface RegistryStore {
  /**
   * Registers the JSON Schema of one (job name, version) if none is
   * registered; resolves to the entry now stored, which is the earlier one
   * when it already existed (the caller compares fingerprints).
   */
  registerSchema(entry: SchemaEntry): Promise<SchemaEntry>;

  /** Registered schemas, optionally of one job name, ordered by name then version. */
  listSchemas(name?: string): Promise<SchemaEntry[]>;

  /**
   * Deletes the schema registered for one (job name, version), in one
   * atomic statement; resolves to whether one was there. Jobs are not
   * touched. Afterwards `registerSchema` takes any schema for that version.
   */
  removeSchema(name: string, version: number): Promise<boolean>;

  /**
   * Records a consumer's presence (who reads what, from which host, last
   * seen): a known id is updated; a new one is inserted while the registry
   * holds fewer than `room.maxWorkers` rows, or else in the place of the row
   * seen longest ago, if that one was last seen before `room.idleBefore`.
   * Resolves to whether it was recorded (false: the registry is full of
   * workers seen since then). Counting and inserting are separate steps:
   * new ids written at the same moment may pass the bound by their number.
   */
  recordWorker(worker: WorkerPresence, room: WorkerRoom): Promise<boolean>;

  /** Deletes the consumers last seen before `seenBefore`; resolves to how many. */
  pruneWorkers(seenBefore: Date): Promise<number>;

  /** Consumers seen at or after `seenSince`. */
  listWorkers(seenSince: Date): Promise<WorkerPresence[]>;

  /**
   * Marks the consumers with these ids seen at `seenAt` (a lease extension
   * is a sign of life too), leaving a later `seenAt` as it is. Ids with no
   * presence recorded are skipped: nothing is inserted.
   */
  touchWorkers(ids: readonly string[], seenAt: Date): Promise<void>;
}

/** One registered payload schema. */
export interface SchemaEntry {
  name: string;
  version: number;
  /** A stable hash of the canonical JSON Schema. */
  fingerprint: string;
  jsonSchema: unknown;
  registeredAt: Date;
}

/** How many consumers the worker registry holds, and which of them may give their place to a new one. */
export interface WorkerRoom {
  /** The most rows the registry holds (see `WORKER_REGISTRY_BOUNDS`). */
  maxWorkers: number;
  /** Rows last seen before this are idle: when the registry is full, the one seen longest ago makes room. */
  idleBefore: Date;
}

/**
 * What bounds the worker registry, which any consume token writes to (a
 * worker id is the client's to choose):
 *
 * - `maxWorkers`: the most rows a store keeps, so no token can grow the
 *   table, or the `admin.workers` listing, without end. Ten thousand is far
 *   above any fleet a queue serves (each `sdk.consume` call is one worker).
 * - `idleAfterMs`: a row not seen for this long makes room for a new worker
 *   when the registry is full. Live workers write their presence every few
 *   seconds (each claim, each lease extension); to keep new workers out, a
 *   token would have to keep `maxWorkers` ids live, some 17 claims a second
 *   at these values, for as long as it wants them kept out. A worker not
 *   recorded still claims and runs jobs: only the listing misses it.
 * - `retentionMs`: rows not seen for a day are pruned by the pruner role.
 */
export const WORKER_REGISTRY_BOUNDS = Object.freeze({
  maxWorkers: 10_000,
  idleAfterMs: 600_000,
  retentionMs: 86_400_000,
} as const);

/** A consumer, as last reported by its server. */
export interface WorkerPresence {
  /** Unique per consumer (worker) instance. */
  id: string;
  host: string;
  name: string;
  minVersion: number;
  maxVersion: number;
  /** The worker's process id, when it reported one (SDKs running in a browser have none). */
  pid: number | null;
  /** When the worker started, by its own clock, when it reported it. */
  startedAt: Date | null;
  seenAt: Date;
}
