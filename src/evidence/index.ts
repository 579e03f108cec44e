export { isCaseInsensitiveFs } from './case-fs.js';
export { buildChangesJson, CHANGES_LIST_CAP } from './changes-json.js';
export { findClaimedOnly } from './claims.js';
export { diffSnapshots } from './diff.js';
export { fileDiff } from './file-diff.js';
export { readGitFacts } from './git-facts.js';
export { MTIME_MAX_ENTRIES } from './mtime-snapshot.js';
export { OUTSIDE_LIST_CAP } from './outside-changes.js';
export {
  describeDependenciesChangedAlone,
  describeGitCode,
  describeOutsideEvidence,
  type OutsideEvidenceWords,
} from './outside-words.js';
export { OUTSIDE_LIMITS, forgetOutsideRecords } from './outside-evidence.js';
export { EXCLUDED_DIR_NAMES } from './paths.js';
export { dropShadowRepo, pruneSnapshots } from './prune.js';
export { DEFAULT_SIZE_CAP_BYTES, takeSnapshot } from './snapshot.js';
export type { ChangeSet, SnapshotOptions } from './types.js';
export { attributesNamingDrivers } from './git-owned-config.js';
