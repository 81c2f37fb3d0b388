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

  /** Upserts a consumer's presence (who reads what, from which host, last seen). */
  recordWorker(worker: WorkerPresence): Promise<void>;

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
