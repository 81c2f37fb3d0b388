import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const DRIVERS = ['mongodb', 'pg', 'mysql2', '@electric-sql/pglite', 'mongodb-memory-server'];
const NODE_BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

/** Bundles an entry for the browser, recording every import; esbuild itself fails on a Node built-in it cannot resolve. */
async function bundleForBrowser(entry: string) {
  const imports: string[] = [];
  const result = await build({
    entryPoints: [fileURLToPath(new URL(entry, import.meta.url))],
    bundle: true,
    write: false,
    platform: 'browser',
    format: 'esm',
    metafile: true,
    logLevel: 'silent',
    plugins: [
      {
        name: 'record-imports',
        setup(b) {
          b.onResolve({ filter: /.*/ }, (args) => {
            imports.push(args.path);
            return undefined;
          });
        },
      },
    ],
  });
  const inputs = Object.keys(result.metafile.inputs);
  return { imports, inputs, bytes: result.outputFiles[0]?.contents.length ?? 0 };
}

describe('browser bundles', () => {
  it('the SDK (producer and consumer) bundles for the browser with no Node built-ins or drivers', async () => {
    const { imports, inputs, bytes } = await bundleForBrowser('../../packages/sdk/src/index.ts');
    expect(bytes).toBeGreaterThan(1000);
    expect(imports.filter((path) => NODE_BUILTINS.has(path))).toEqual([]);
    for (const driver of DRIVERS)
      expect(inputs.filter((input) => input.includes(`/node_modules/${driver}/`))).toEqual([]);
    expect(inputs.some((input) => input.includes('@trpc/client'))).toBe(true);
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
