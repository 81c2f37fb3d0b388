#!/usr/bin/env node
import { isWorkqError } from '@workq/core';
import { HELP, parseServerArgs } from './cli-args.ts';
import type { ServerOptions } from './options.ts';
import { startServer } from './start-server.ts';

/** The `workq-server` command. */
async function main(): Promise<void> {
  let options: ServerOptions | 'help';
  try {
    options = parseServerArgs(process.argv.slice(2), process.env);
  } catch (error) {
    process.stderr.write(`workq-server: ${(error as Error).message}\n\n${HELP}`);
    process.exit(2);
  }
  if (options === 'help') {
    process.stdout.write(HELP);
    return;
  }
  // The handlers go in before the server starts: /healthz answers before `startServer` resolves, so a signal
  // can arrive while the store is still opening. It then closes the server once it is up; a start that fails
  // is reported below either way.
  const started = startServer(options);
  const stop = () =>
    void started.then(
      (server) => server.close().then(() => process.exit(0)),
      () => undefined,
    );
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await started;
  } catch (error) {
    process.stderr.write(`workq-server: ${isWorkqError(error) ? error.message : String(error)}\n`);
    process.exit(1);
  }
}

await main();
