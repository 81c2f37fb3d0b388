/**
 * The ids of `docs`, by job name: a write to jobs names the job type, which
 * is the shard key the store is ready for (`{ name: 1 }`), so each write of a
 * batch spanning types goes to the one shard holding its type.
 */
export function idsByName(docs: readonly { _id: string; name: string }[]): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  for (const { _id, name } of docs) {
    const ids = byName.get(name);
    if (ids) ids.push(_id);
    else byName.set(name, [_id]);
  }
  return byName;
}
