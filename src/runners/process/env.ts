/** Options of `buildWorkerEnv`. */
export interface WorkerEnvOptions {
  /** More names to remove, e.g. paid-API keys for a `subscription` runner (spec 04 "Environment and billing"). */
  removeKeys?: readonly string[];
}

/** gaffer's own secrets, removed by name. */
const GAFFER_SECRET_NAMES: ReadonlySet<string> = new Set(['GAFFER_TOKEN', 'GAFFER_MODEL_KEY']);

/** Any other `GAFFER_*` whose name says it holds a secret. */
const GAFFER_SECRET_PATTERN = /^GAFFER_.*(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL)/i;

/**
 * Git variables that tell git WHICH repository, work tree, index or object store to use.
 * Left in place they would point a worker's `git` at gaffer's (or the caller's) repository
 * instead of the workspace. The list is git's own `git rev-parse --local-env-vars` (what git
 * clears when it enters a submodule) minus the config-passing ones (`GIT_CONFIG`,
 * `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`, which carry settings, not a location), plus the
 * discovery/namespace variables. Identity, ssh, editor and trace variables stay.
 */
export const REPO_LOCATING_GIT_VARS: readonly string[] = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_COMMON_DIR',
  'GIT_IMPLICIT_WORK_TREE',
  'GIT_GRAFT_FILE',
  'GIT_NO_REPLACE_OBJECTS',
  'GIT_REPLACE_REF_BASE',
  'GIT_PREFIX',
  'GIT_INTERNAL_SUPER_PREFIX',
  'GIT_SHALLOW_FILE',
  'GIT_NAMESPACE',
  'GIT_CEILING_DIRECTORIES',
  'GIT_DISCOVERY_ACROSS_FILESYSTEM',
  'GIT_QUARANTINE_PATH',
];
const REPO_LOCATING_GIT_SET: ReadonlySet<string> = new Set(REPO_LOCATING_GIT_VARS);

/**
 * Values that are gaffer's own secrets whatever variable holds them: config tokens and model keys
 * (a `key_env` names any variable, e.g. `ANTHROPIC_API_KEY`). Registered once the config is loaded.
 */
const SECRET_VALUES = new Set<string>();

/** Registers gaffer's secret values (config tokens, resolved model keys): no worker env carries them. */
export function registerSecretValues(values: Iterable<string | null | undefined>): void {
  for (const value of values) if (value) SECRET_VALUES.add(value);
}

/** True when `name` is one of gaffer's own secrets. */
export function isGafferSecret(name: string): boolean {
  return GAFFER_SECRET_NAMES.has(name) || GAFFER_SECRET_PATTERN.test(name);
}

/**
 * A worker's environment (spec 04): the parent's, minus gaffer's own secrets (by name, or by a
 * registered value under any name), minus the repository-locating `GIT_*` variables, minus
 * `removeKeys`. Returns a new object.
 */
export function buildWorkerEnv(parentEnv: NodeJS.ProcessEnv, opts: WorkerEnvOptions = {}): NodeJS.ProcessEnv {
  const remove = new Set(opts.removeKeys ?? []);
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(parentEnv)) {
    if (value === undefined) continue;
    if (isGafferSecret(name) || SECRET_VALUES.has(value) || REPO_LOCATING_GIT_SET.has(name) || remove.has(name)) continue;
    env[name] = value;
  }
  return env;
}
