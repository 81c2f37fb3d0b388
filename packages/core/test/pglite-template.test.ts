import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createPgliteStore } from '../src/stores/postgres/create-store.ts';
import { pgliteTemplateFor } from '../src/stores/postgres/pglite-template.ts';

// The template is a build output (scripts/pglite-template.mjs, run by `build`): these tests read the built one.
describe('a new PGlite database starts from the built template instead of initdb', () => {
  const root = mkdtempSync(join(tmpdir(), 'workq-pglite-template-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('offers the template for a fresh directory and for memory, never over an existing database', async () => {
    const fresh = await pgliteTemplateFor(join(root, 'fresh'));
    expect(fresh.loadDataDir?.size).toBeGreaterThan(1_000_000);
    expect((await pgliteTemplateFor(undefined)).loadDataDir).toBeInstanceOf(Blob);
  });

  it('opens a fresh directory from it, migrates, answers, and opens that database again', async () => {
    const dataDir = join(root, 'data');
    const store = await createPgliteStore({ dataDir });
    expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);
    await store.ping();
    await store.close();
    expect(await pgliteTemplateFor(dataDir)).toEqual({});
    const reopened = await createPgliteStore({ dataDir });
    await reopened.ping();
    await reopened.close();
  });
});
