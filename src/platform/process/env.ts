import { readHeldEnv } from './scrub-env.js';

/** Options of `buildWorkerEnv`. */
export interface WorkerEnvOptions {
  /** The runner's own documented variables (billing-env.ts `listRunnerEnvNames`), passed besides the allowlist. */
  allow?: readonly string[];
  /** Names never passed, even when allowed: a `subscription` runner's paid-API keys (spec 04 "Environment and billing"). */
  removeKeys?: readonly string[];
}

/**
 * What every worker and the verification get from gaffer's environment (spec 04: an allowlisted
 * environment, never gaffer's minus a denylist). Who and where the user is, the terminal, proxies and
 * CA bundles a toolchain needs to fetch through a corporate proxy, where the toolchains live (go,
 * rust, java, python, node, ruby) and git's identity. Everything else — API keys, cloud credentials,
 * `NODE_OPTIONS`, `npm_config_*` (an npm token may sit there) — reaches a worker only when the config
 * names it in `env.pass`.
 */
export const WORKER_ENV_NAMES: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'TERM',
  'COLORTERM',
  'NO_COLOR',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'XDG_STATE_HOME',
  'XDG_CACHE_HOME',
  'XDG_CONFIG_DIRS',
  'XDG_DATA_DIRS',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'PIP_CERT',
  'GIT_SSL_CAINFO',
  'CARGO_HTTP_CAINFO',
  'DENO_CERT',
  'NIX_SSL_CERT_FILE',
  'GOPATH',
  'GOROOT',
  'GOCACHE',
  'GOMODCACHE',
  'GOTOOLCHAIN',
  'GOFLAGS',
  'GOPROXY',
  'CARGO_HOME',
  'RUSTUP_HOME',
  'RUSTUP_TOOLCHAIN',
  'JAVA_HOME',
  'GRADLE_USER_HOME',
  'PYENV_ROOT',
  'PYENV_VERSION',
  'VIRTUAL_ENV',
  'CONDA_PREFIX',
  'PYTHONPATH',
  'NVM_DIR',
  'NVM_BIN',
  'VOLTA_HOME',
  'PNPM_HOME',
  'COREPACK_HOME',
  'BUN_INSTALL',
  'DENO_DIR',
  'NODE_PATH',
  'GEM_HOME',
  'GEM_PATH',
  'RBENV_ROOT',
  'LD_LIBRARY_PATH',
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  // a worktree's own port (spec 06): set by the place, so parallel dev servers and tests don't collide
  'GAFFER_PORT',
  'PORT',
];
const WORKER_ENV_SET: ReadonlySet<string> = new Set(WORKER_ENV_NAMES);

/** Locale categories (`LC_ALL`, `LC_CTYPE`, …): a test's sort order or encoding depends on them. */
const WORKER_ENV_PREFIX = /^LC_[A-Z_]+$/;

/** gaffer's own secrets, removed by name. */
const GAFFER_SECRET_NAMES: ReadonlySet<string> = new Set(['GAFFER_TOKEN', 'GAFFER_TOKENS', 'GAFFER_MODEL_KEY']);

/** Any other `GAFFER_*` whose name says it holds a secret. */
const GAFFER_SECRET_PATTERN = /^GAFFER_.*(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL)/i;

/**
 * Git variables that tell git WHICH repository, work tree, index or object store to use.
 * Left in place they would point a worker's `git` at gaffer's (or the caller's) repository
 * instead of the workspace. The list is git's own `git rev-parse --local-env-vars` (what git
 * clears when it enters a submodule) minus the config-passing ones (`GIT_CONFIG`,
 * `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`, which carry settings, not a location), plus the
 * discovery/namespace variables. Never passed, not even through `env.pass`.
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

/** Config `env.pass`: names passed to every worker and the verification besides the allowlist. */
const PASSED_NAMES = new Set<string>();

/** Registers gaffer's secret values (config tokens, resolved model keys): no worker env carries them. */
export function registerSecretValues(values: Iterable<string | null | undefined>): void {
  for (const value of values) if (value) SECRET_VALUES.add(value);
}

/** Registers config `env.pass` (once the config is loaded; the CLI does it at start for every command). */
export function registerPassedEnv(names: Iterable<string>): void {
  for (const name of names) PASSED_NAMES.add(name);
}

/** True when `name` is one of gaffer's own secrets. */
export function isGafferSecret(name: string): boolean {
  return GAFFER_SECRET_NAMES.has(name) || GAFFER_SECRET_PATTERN.test(name);
}

/** True when `value` is a registered secret of gaffer's (a config token or a model key). */
export function isSecretValue(value: string): boolean {
  return SECRET_VALUES.has(value);
}

/**
 * Names that say a variable holds a credential (`AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, every
 * `*_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, `DOCKER_PASSWORD`, …): gaffer never needs one for itself.
 */
const CREDENTIAL_NAME = /(^|_)(API_?KEY|ACCESS_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_?KEY)S?(_|$)/i;

/** True when `name` says it holds a credential (see `listStartSecretNames`). */
export function isCredentialName(name: string): boolean {
  return CREDENTIAL_NAME.test(name);
}

/**
 * What gaffer takes out of its own environment at start (scrub-env.ts `holdEnvSecrets`): its own
 * secrets by name, any variable holding a registered secret value (a `key_env` key), and every
 * credential by name — kept in memory for a runner that is allowed one (an `api` runner's key, a
 * name in `env.pass`), gone from what `/proc/<pid>/environ` and gaffer's other children see.
 */
export function listStartSecretNames(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(
      ([name, value]) =>
        isGafferSecret(name) || (value !== undefined && SECRET_VALUES.has(value)) || isCredentialName(name),
    )
    .map(([name]) => name);
}

/** True when `name` is on the allowlist every worker gets. */
export function isAllowlistedEnv(name: string): boolean {
  return WORKER_ENV_SET.has(name) || WORKER_ENV_PREFIX.test(name);
}

/**
 * A worker's environment (spec 04): from `parentEnv`, only the allowlist (`WORKER_ENV_NAMES`,
 * `LC_*`), config `env.pass` and `opts.allow` (the runner's own variables). A passed or allowed name
 * gaffer held back at start (scrub-env.ts) comes from memory. Never gaffer's own secrets (by name, or
 * by a registered value under any name), the repository-locating `GIT_*` variables or `removeKeys`.
 * Returns a new object.
 */
export function buildWorkerEnv(parentEnv: NodeJS.ProcessEnv, opts: WorkerEnvOptions = {}): NodeJS.ProcessEnv {
  const remove = new Set(opts.removeKeys ?? []);
  const env: NodeJS.ProcessEnv = {};
  const take = (name: string, value: string | undefined): void => {
    if (
      value === undefined ||
      isGafferSecret(name) ||
      SECRET_VALUES.has(value) ||
      REPO_LOCATING_GIT_SET.has(name) ||
      remove.has(name)
    )
      return;
    env[name] = value;
  };
  for (const [name, value] of Object.entries(parentEnv)) if (isAllowlistedEnv(name)) take(name, value);
  for (const name of [...PASSED_NAMES, ...(opts.allow ?? [])]) take(name, parentEnv[name] ?? readHeldEnv(name));
  return env;
}
