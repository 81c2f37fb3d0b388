import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: { workq: 'src/workq.ts' },
  format: 'esm',
  platform: 'node',
  target: 'node20',
  fixedExtension: false,
  sourcemap: true,
  clean: true,
});
