import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/** The dashboard is served by the queue server under `/ui/`; its assets carry content hashes. */
export default defineConfig({
  base: '/ui/',
  // The SDK is bundled from its sources (the `paths` of tsconfig.base.json), so the dashboard builds without the
  // SDK's own build before it. Those paths give the SDK its Node HTTP client; a browser takes the fetch one, as the
  // SDK's package `imports` choose for an installing project.
  resolve: {
    tsconfigPaths: true,
    alias: {
      '#default-fetch': fileURLToPath(new URL('../../packages/sdk/src/http/default-fetch.ts', import.meta.url)),
    },
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', sourcemap: false },
});
