import { builtinModules } from 'node:module';
import { build } from 'esbuild';

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
 * sources (`workq-source`), as in the rest of the suite; installed packages
 * do not know that condition and resolve to what they publish.
 */
export async function bundleForBrowser(entry: string, options: { cwd?: string } = {}): Promise<BrowserBundle> {
  const imports: string[] = [];
  const result = await build({
    entryPoints: [entry],
    ...(options.cwd ? { absWorkingDir: options.cwd } : {}),
    bundle: true,
    write: false,
    platform: 'browser',
    conditions: ['workq-source'],
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
        },
      },
    ],
  });
  return { imports, inputs: Object.keys(result.metafile.inputs), text: result.outputFiles[0]?.text ?? '' };
}
