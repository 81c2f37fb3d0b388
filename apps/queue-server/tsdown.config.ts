import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    router: 'src/router/index.ts',
    cli: 'src/cli.ts',
    workq: 'src/tools/workq.ts',
  },
  format: 'esm',
  platform: 'node',
  target: 'node20',
  fixedExtension: false,
  dts: true,
  sourcemap: true,
  clean: true,
});
