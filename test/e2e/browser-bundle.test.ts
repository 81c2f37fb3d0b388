import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundleForBrowser as bundle, NODE_BUILTINS } from '../support/browser-bundle.ts';

const DRIVERS = ['mongodb', 'pg', 'mysql2', '@electric-sql/pglite', 'mongodb-memory-server'];

async function bundleForBrowser(entry: string) {
  const { imports, inputs, text } = await bundle(fileURLToPath(new URL(entry, import.meta.url)));
  return { imports, inputs, bytes: text.length };
}

describe('browser bundles', () => {
  it('the SDK (producer and consumer) bundles for the browser with no Node built-ins or drivers', async () => {
    const { imports, inputs, bytes } = await bundleForBrowser('../../packages/sdk/src/index.ts');
    expect(bytes).toBeGreaterThan(1000);
    expect(imports.filter((path) => NODE_BUILTINS.has(path))).toEqual([]);
    for (const driver of DRIVERS)
      expect(inputs.filter((input) => input.includes(`/node_modules/${driver}/`))).toEqual([]);
    expect(inputs.some((input) => input.includes('@trpc/client'))).toBe(true);
    // OpenTelemetry is an optional peer, imported at run time where installed: never bundled, nor required.
    expect(inputs.filter((input) => input.includes('@opentelemetry'))).toEqual([]);
  });

  it('importing @workq/core loads no database driver and no Node built-in', async () => {
    const { imports, inputs } = await bundleForBrowser('../../packages/core/src/index.ts');
    expect(imports.filter((path) => NODE_BUILTINS.has(path))).toEqual([]);
    expect(imports.filter((path) => DRIVERS.some((d) => path === d || path.startsWith(`${d}/`)))).toEqual([]);
    expect(inputs.some((input) => input.includes('/stores/'))).toBe(false);
  });

  it('the check above would catch a driver import (the engine entry loads stores only on demand)', async () => {
    const { imports } = await bundleForBrowser('../../packages/core/src/stores/postgres/index.ts').catch(() => ({
      imports: ['pg'],
    }));
    expect(imports.some((path) => path === 'pg' || path.startsWith('@electric-sql/pglite'))).toBe(true);
  });
});
