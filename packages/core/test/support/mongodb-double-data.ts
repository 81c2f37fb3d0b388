/** The driver double's data layer, which now lives in test support beside the wire-protocol primary. */
export type { Doc, IndexSpec } from '@workq/test-support';
export {
  CollectionData,
  cloneDoc,
  duplicateKeyError,
  projected,
  updatedDoc,
  upsertSeed,
  valueAt,
  writeError,
} from '@workq/test-support';
