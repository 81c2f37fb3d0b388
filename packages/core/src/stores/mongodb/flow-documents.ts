import type { Collection, MongoClient, WriteConcernSettings } from 'mongodb';
import type { RateBucket } from './rate-buckets.ts';
import type { JobDocument } from './records.ts';

/** A job type's settings, keyed by its name. */
export interface QueueSettingsDocument {
  _id: string;
  paused: boolean;
  concurrency: number | null;
  rateLimit: { max: number; perMs: number } | null;
  groupConcurrency: number | null;
  /** Strict group order (see `QueueLimits.groupOrder`); absent on documents stored before it existed. */
  groupOrder?: 'strict' | null;
  grouped: boolean;
  /** The rate-limit state (see `RateBuckets`); absent before the first rate-limited claim. */
  rateBuckets?: RateBucket[];
  /** The log of starts the rate limit kept before `rateBuckets`, read once into them and then removed. */
  recentStarts?: number[];
  lastTurn: number;
  /** When the type's hold (`ctx.rateLimited`) ends; absent before the first hold. */
  heldUntil?: Date | null;
  updatedAt: Date;
  /** Bumped by every limited claim of the type as its transaction's first write (see flow-control.ts); absent before one. */
  fence?: number;
}

/** The last turn of one group of a type; `_id` is `JSON.stringify([name, group])`. */
export interface QueueGroupDocument {
  _id: string;
  name: string;
  group: string;
  lastTurn: number;
}

/** What a limited claim runs on. */
export interface FlowCollections {
  client: MongoClient;
  jobs: Collection<JobDocument>;
  settings: Collection<QueueSettingsDocument>;
  groups: Collection<QueueGroupDocument>;
  /** The store's write concern, which its transactions commit with (see `transactionOptions`). */
  writeConcern: WriteConcernSettings;
  /** Host list for error messages (never credentials). */
  hosts: string;
  /** How long each call to the server may take before it is abandoned (see `withCallLimit`). */
  limitMs: number;
}
