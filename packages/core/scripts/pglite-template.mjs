// Writes dist/pglite-template-<PGlite version>.tar.gz: the data directory of a freshly initialised PGlite,
// which createPgliteStore loads into a new database instead of running initdb (src/stores/postgres/
// pglite-template.ts reads it under the same name). Run by `build`, after tsdown.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';

const manifest = new URL('../package.json', import.meta.resolve('@electric-sql/pglite'));
const { version } = JSON.parse(readFileSync(fileURLToPath(manifest), 'utf8'));
const db = await PGlite.create();
const dump = await db.dumpDataDir('gzip');
await db.close();
const target = new URL(`../dist/pglite-template-${version}.tar.gz`, import.meta.url);
writeFileSync(target, Buffer.from(await dump.arrayBuffer()));
console.log(`wrote ${fileURLToPath(target)}`);
