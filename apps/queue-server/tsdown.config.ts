import { cpSync, existsSync } from 'node:fs';
import { defineConfig } from 'tsdown';

/** The dashboard's build (`apps/dashboard`, built first by turbo), shipped in this package as `dist/ui/`. */
const DASHBOARD_BUILD = new URL('../dashboard/dist/', import.meta.url);

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    router: 'src/router/index.ts',
    cli: 'src/cli.ts',
  },
  format: 'esm',
  platform: 'node',
  target: 'node20',
  fixedExtension: false,
  dts: true,
  sourcemap: true,
  clean: true,
  hooks: {
    'build:done': () => {
      if (!existsSync(new URL('index.html', DASHBOARD_BUILD))) {
        throw new Error('The dashboard is not built: run `pnpm build` (turbo builds @workq/dashboard first).');
      }
      cpSync(DASHBOARD_BUILD, new URL('./dist/ui/', import.meta.url), { recursive: true });
    },
  },
});
