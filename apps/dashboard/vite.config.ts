import { defaultClientConditions, defineConfig } from 'vite';

/** The dashboard is served by the queue server under `/ui/`; its assets carry content hashes. */
export default defineConfig({
  base: '/ui/',
  // The SDK is bundled from its sources (the `workq-source` condition in its `exports`), so the dashboard builds
  // without the SDK's own build before it.
  resolve: { conditions: ['workq-source', ...defaultClientConditions] },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', sourcemap: false },
});
