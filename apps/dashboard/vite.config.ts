import { defineConfig } from 'vite';

/** The dashboard is served by the queue server under `/ui/`; its assets carry content hashes. */
export default defineConfig({
  base: '/ui/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', sourcemap: false },
});
