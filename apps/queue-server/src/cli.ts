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
  try {
    const server = await startServer(options);
    const stop = () => void server.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  } catch (error) {
    process.stderr.write(`workq-server: ${isWorkqError(error) ? error.message : String(error)}\n`);
    process.exit(1);
  }
}

await main();
