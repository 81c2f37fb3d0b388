import type { Doc, RecordedCommand } from '@workq/test-support';

/** One write statement of a recorded command: its filter, and whether it may change several documents. */
export interface WriteStatement {
  command: string;
  filter: Doc;
  multi: boolean;
}

/**
 * The write statements of a recorded command (`update`, `delete`,
 * `findAndModify`), each with the filter mongos would route it by: one that
 * names the shard key goes to the shard holding it, any other to every shard.
 */
export function writeStatements(command: RecordedCommand): WriteStatement[] {
  const { body, name } = command;
  if (Array.isArray(body.updates)) {
    return (body.updates as Doc[]).map((update) => ({
      command: name,
      filter: update.q as Doc,
      multi: update.multi === true,
    }));
  }
  if (Array.isArray(body.deletes)) {
    return (body.deletes as Doc[]).map((remove) => ({
      command: name,
      filter: remove.q as Doc,
      multi: remove.limit !== 1,
    }));
  }
  if (body.findAndModify !== undefined) return [{ command: name, filter: body.query as Doc, multi: false }];
  return [];
}

/** Of `commands`, the write statements to `jobs` of `dbName` whose filter does not name the job type. */
export function untargetedJobWrites(commands: readonly RecordedCommand[], dbName: string): WriteStatement[] {
  return commands
    .filter((command) => command.db === dbName && Object.values(command.body)[0] === 'workq_jobs')
    .flatMap(writeStatements)
    .filter(({ filter }) => typeof filter?.name !== 'string');
}
