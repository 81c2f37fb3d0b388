import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    engine: 'src/engine/index.ts',
    mongodb: 'src/stores/mongodb/index.ts',
    postgres: 'src/stores/postgres/index.ts',
    mysql: 'src/stores/mysql/index.ts',
  },
  format: 'esm',
  platform: 'neutral',
  target: 'node20',
  dts: true,
  sourcemap: true,
  clean: true,
});
