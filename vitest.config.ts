import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The workspace packages export their build; the `paths` of tsconfig.base.json map them to their TypeScript
  // sources instead, so tests that import a package by name and tests that import its sources by path share one
  // copy of each module, and a test needs no build to see a change. Vite leaves a `#` import to the package's
  // `imports`, which name the build, so the SDK's Node HTTP client is named here as those paths name it.
  resolve: {
    tsconfigPaths: true,
    alias: { '#default-fetch': fileURLToPath(new URL('packages/sdk/src/http/node-fetch.ts', import.meta.url)) },
  },
  test: {
    include: ['packages/*/{src,test}/**/*.test.ts', 'apps/*/{src,test}/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', 'bench/**'],
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
    // Two test files at a time: most files wait on databases and child processes, so a second one
    // fills the idle core; the suite's timing checks measure CPU time, not the wall clock.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    typecheck: {
      enabled: true,
      include: ['packages/*/{src,test}/**/*.test-d.ts', 'apps/*/{src,test}/**/*.test-d.ts', 'test/**/*.test-d.ts'],
      tsconfig: './tsconfig.typetests.json',
      ignoreSourceErrors: true,
    },
  },
});
