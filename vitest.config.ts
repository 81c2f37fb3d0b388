import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/{src,test}/**/*.test.ts', 'apps/*/{src,test}/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', 'bench/**'],
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
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
