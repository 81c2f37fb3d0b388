import type { Collection, DeleteOptions, UpdateOptions } from 'mongodb';
import type { LeaderElection } from '../../roles/leadership.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { isDuplicateKeyError, toWorkqError } from './errors.ts';

/** A role's lease: who holds it, until when. */
export interface LeaderDocument {
  _id: string;
  holder: string;
  expiresAt: Date;
}

/**
 * Leader election on MongoDB: a lease document per role. Taking or renewing
 * is one upsert that matches only a lease that is the holder's or expired;
 * when another holder's lease is live, the upsert's insert collides with it
 * on `_id` (duplicate key), and the answer is "not the leader".
 */
export function createMongoLeaderElection(
  leaders: Collection<LeaderDocument>,
  hosts: string,
  limitMs: number,
): LeaderElection {
  return {
    async tryLead(role, holder, now, ttlMs) {
      const expiresAt = new Date(now.getTime() + ttlMs);
      try {
        await withCallLimit(limitMs, (signal) => {
          const options: Abortable<UpdateOptions> = { upsert: true, signal };
          return leaders.updateOne(
            { _id: role, $or: [{ holder }, { expiresAt: { $lte: now } }] },
            { $set: { holder, expiresAt } },
            options,
          );
        });
        return true;
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw toWorkqError(error, hosts, 'tryLead');
      }
    },
    async resign(role, holder) {
      try {
        // At most one document: `_id` is the role.
        await withCallLimit(limitMs, (signal) => {
          const options: Abortable<DeleteOptions> = { signal };
          return leaders.deleteMany({ _id: role, holder }, options);
        });
      } catch (error) {
        throw toWorkqError(error, hosts, 'resign');
      }
    },
  };
}
