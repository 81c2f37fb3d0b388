/** `@workq/queue-server`: start a queue server in-process, or run `workq-server`. */

export type { CronEntry } from '@workq/core/engine';
export { type CatalogCronEntry, defineCrontab } from './define-crontab.ts';
export type { CorsOptions, Logger, ServerLimits, ServerOptions, TokenGrant } from './options.ts';
export { DEFAULT_LIMITS, resolveServerOptions } from './options.ts';
export type { AppRouter } from './router/index.ts';
export { type MintTokenOptions, mintToken } from './signed-tokens.ts';
export type { QueueServer } from './start-server.ts';
export { startServer } from './start-server.ts';
