import { readdirSync, readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

/**
 * The server's transport (router/, http/) is a thin adapter: it reaches the
 * store only through the use cases in app/. Import rules (dependency-cruiser)
 * see modules, not names, and the engine's entry exports the store contract
 * beside the engine, so the names are checked here.
 */
const ENGINE_ENTRY = new URL('../../../packages/core/src/engine/index.ts', import.meta.url);
const TRANSPORT = ['router', 'http'].map((dir) => new URL(`./${dir}/`, import.meta.url));

/** The names `@workq/core/engine` re-exports from the store contract and the store folders. */
function storeNames(): Set<string> {
  const names = new Set<string>();
  const reexport = /export\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'([^']+)'/g;
  for (const [, list, from] of readFileSync(ENGINE_ENTRY, 'utf8').matchAll(reexport)) {
    if (!/(^|\/|-)stores?(\/|\.ts$)/.test(from as string)) continue;
    for (const item of (list as string).split(',')) {
      const name = item.replace(/^\s*type\s+/, '').trim();
      if (name) names.add(name);
    }
  }
  return names;
}

/** Each transport module's source, by its path under src/. */
function transportSources(): [string, string][] {
  return TRANSPORT.flatMap((dir) =>
    readdirSync(dir)
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
      .map((file): [string, string] => [
        `${dir.pathname.split('/').at(-2)}/${file}`,
        readFileSync(new URL(file, dir), 'utf8'),
      ]),
  );
}

it('keeps the router and the HTTP adapters off the store: no store type imported, no store reached', () => {
  const forbidden = storeNames();
  expect(forbidden.has('Store')).toBe(true);
  const found: string[] = [];
  for (const [path, source] of transportSources()) {
    const imports = /import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'@workq\/core\/engine'/g;
    for (const [, list] of source.matchAll(imports)) {
      for (const item of (list as string).split(',')) {
        const name = item.replace(/^\s*type\s+/, '').trim();
        if (forbidden.has(name)) found.push(`${path} imports ${name}`);
      }
    }
    if (/\.store\b|\{[^}]*\bstore\b[^}]*\}\s*=/.test(source)) found.push(`${path} reaches the store`);
  }
  expect(found).toEqual([]);
});
