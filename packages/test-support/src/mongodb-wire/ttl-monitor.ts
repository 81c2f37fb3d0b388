import { HeldByTransaction, type PrimaryState } from './primary.ts';

/**
 * One pass of the server's TTL monitor at `now` (the primary's clock unless given): in every collection, the
 * documents a TTL index finds expired (`CollectionData.expired`) are deleted one by one, each delete in the
 * oplog as any other, so change streams see it. A document a transaction holds is left to the next pass, as
 * the server's delete meets a write conflict and yields to the transaction. A member that is not a writable
 * primary deletes nothing. Resolves to how many documents it deleted.
 */
export function runTtlPass(primary: PrimaryState, now: Date = primary.now()): number {
  if (!primary.writablePrimary) return 0;
  let deleted = 0;
  for (const [db, collections] of primary.databases) {
    for (const [coll, data] of collections) {
      for (const doc of data.expired(now)) {
        try {
          primary.remove(db, coll, doc, undefined);
          deleted += 1;
        } catch (error) {
          if (!(error instanceof HeldByTransaction)) throw error;
        }
      }
    }
  }
  return deleted;
}
