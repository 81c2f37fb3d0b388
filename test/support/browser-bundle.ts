import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The SDK's sources, and the module its `#default-fetch` import names in a browser. */
const SDK_SOURCES = fileURLToPath(new URL('../../packages/sdk/src/', import.meta.url));
const BROWSER_FETCH = `${SDK_SOURCES}http/default-fetch.ts`;

/** Node's built-in modules, with and without the `node:` prefix. */
export const NODE_BUILTINS: ReadonlySet<string> = new Set([
  ...builtinModules,
  ...builtinModules.map((m) => `node:${m}`),
]);

/** What a browser bundle of one entry holds. */
export interface BrowserBundle {
  /** Every import specifier the bundler resolved, as written. */
  imports: string[];
  /** The files that went into the bundle. */
  inputs: string[];
  /** The bundled script. */
  text: string;
}

/**
 * Bundles an entry for the browser as a page's bundler would (ESM, browser
 * conditions), recording every import; esbuild itself fails on a Node
 * built-in it cannot resolve. The workspace packages resolve to their
 * sources (the `paths` of tsconfig.base.json, which esbuild reads), as in the
 * rest of the suite, the SDK's `#default-fetch` to its browser module as its
 * package `imports` choose; installed packages resolve to what they publish.
 */
export async function bundleForBrowser(entry: string, options: { cwd?: string } = {}): Promise<BrowserBundle> {
  const imports: string[] = [];
  const result = await build({
    entryPoints: [entry],
    ...(options.cwd ? { absWorkingDir: options.cwd } : {}),
    bundle: true,
    write: false,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
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
          b.onResolve({ filter: /^#default-fetch$/ }, (args) =>
            args.importer.startsWith(SDK_SOURCES) ? { path: BROWSER_FETCH } : undefined,
          );
        },
      },
    ],
  });
  return { imports, inputs: Object.keys(result.metafile.inputs), text: result.outputFiles[0]?.text ?? '' };
}
