import { canonicalJson, diffJsonSchemas, toPayloadJsonSchema } from './json-schema.ts';
import type { Catalog } from './types.ts';

/** A committed record of a catalog's payload schemas, per job and version. */
export interface SchemaSnapshot {
  formatVersion: 1;
  jobs: Record<string, { currentVersion: number; versions: Record<string, Record<string, unknown>> }>;
}

/** One reason a catalog cannot be deployed over what the snapshot recorded. */
export interface CompatibilityProblem {
  job: string;
  version: number;
  message: string;
}

/** The snapshot of a catalog as it is now. */
export function snapshotCatalog(catalog: Catalog): SchemaSnapshot {
  const snapshot: SchemaSnapshot = { formatVersion: 1, jobs: {} };
  for (const name of Object.keys(catalog).sort()) {
    const definition = catalog[name];
    if (!definition) continue;
    const versions: Record<string, Record<string, unknown>> = {};
    for (const version of definition.versions) {
      const schema = version === definition.version ? definition.payload : definition.previous[version]?.payload;
      if (schema) versions[String(version)] = toPayloadJsonSchema(schema);
    }
    snapshot.jobs[name] = { currentVersion: definition.version, versions };
  }
  return snapshot;
}

/**
 * Compares a catalog with the committed snapshot. A problem is: a recorded
 * version whose schema changed in a way that breaks readers (field removed,
 * type changed, new required field without default, enum value removed); a
 * recorded current version dropped without an upgrade to the new one; a job
 * type removed. Compatible additions (optional fields, new versions with
 * their upgrades, new job types) are not problems.
 */
export function checkCompatibility(catalog: Catalog, snapshot: SchemaSnapshot): CompatibilityProblem[] {
  const current = snapshotCatalog(catalog);
  const problems: CompatibilityProblem[] = [];
  for (const [name, recorded] of Object.entries(snapshot.jobs)) {
    const now = current.jobs[name];
    if (!now) {
      problems.push({
        job: name,
        version: recorded.currentVersion,
        message: `job type "${name}" was removed; queued jobs of it would never run (keep it until they are drained)`,
      });
      continue;
    }
    for (const [versionText, before] of Object.entries(recorded.versions)) {
      const version = Number(versionText);
      const after = now.versions[versionText];
      if (!after) {
        if (version === recorded.currentVersion && now.currentVersion > version) {
          problems.push({
            job: name,
            version,
            message: `version ${version} was replaced by ${now.currentVersion} without an upgrade: declare previous[${version}] with its payload and upgrade, so queued v${version} jobs can still be read`,
          });
        }
        continue;
      }
      if (canonicalJson(before) === canonicalJson(after)) continue;
      for (const change of diffJsonSchemas(before, after).filter((c) => c.breaking)) {
        problems.push({
          job: name,
          version,
          message: `${change.path}: ${change.detail} without a version bump; declare version ${now.currentVersion + (version === now.currentVersion ? 1 : 0)} with an upgrade instead`,
        });
      }
    }
  }
  return problems;
}
