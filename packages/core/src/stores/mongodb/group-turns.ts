import type { Collection, DeleteOptions, Filter } from 'mongodb';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { GROUP_TURNS_INDEX } from './indexes.ts';

/** The most group turns kept per job type: those of the groups served most recently. */
export const MAX_GROUP_TURNS = 10_000;

/**
 * Deletes, for each job type, the group turns (`queue_groups`) older than
 * its `MAX_GROUP_TURNS` most recent, so the collection stays bounded however
 * many groups a type has ever had. A group without a turn counts as served
 * at turn 0 (see `claimUnderSettings`), before every group with one, and a
 * group whose turn is that old is served before the others anyway: only the
 * order among such groups (then by name) changes. Reads and deletes along
 * the `turns_by_name` index. Resolves to how many turns it deleted.
 */
export async function pruneGroupTurns<T extends { name: string; lastTurn: number }>(
  groups: Collection<T>,
  limitMs: number,
): Promise<number> {
  const names = await withCallLimit(limitMs, (signal) =>
    groups.aggregate<{ _id: string }>([{ $group: { _id: '$name' } }], { signal }).toArray(),
  );
  let deleted = 0;
  for (const { _id: name } of names) {
    const [oldestKept] = await withCallLimit(limitMs, (signal) =>
      groups
        .find({ name } as Filter<T>, {
          sort: { lastTurn: -1 },
          skip: MAX_GROUP_TURNS - 1,
          limit: 1,
          projection: { lastTurn: 1 },
          hint: GROUP_TURNS_INDEX,
          signal,
        })
        .toArray(),
    );
    if (!oldestKept) continue;
    const old = { name, lastTurn: { $lt: oldestKept.lastTurn } } as Filter<T>;
    const { deletedCount } = await withCallLimit(limitMs, (signal) => {
      const options: Abortable<DeleteOptions> = { hint: GROUP_TURNS_INDEX, signal };
      return groups.deleteMany(old, options);
    });
    deleted += deletedCount;
  }
  return deleted;
}
