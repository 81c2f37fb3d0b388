// `node --import` this file to run the repository's TypeScript as the suite runs it: tsx, with the `paths` of
// tsconfig.base.json (through test/tsconfig.json), which map the workspace packages to their sources rather than
// their `dist`. The setting is an environment variable, so processes the child starts run the same way.
import { fileURLToPath } from 'node:url';

process.env.TSX_TSCONFIG_PATH ??= fileURLToPath(new URL('../tsconfig.json', import.meta.url));
await import('tsx');
