import { existsSync, readFileSync } from 'node:fs';
import { homedir, totalmem } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { yaml } from '../platform/files/yaml.js';
import { GafferError } from '../domain/errors.js';
import { knownKeysAt, suggestKeys } from '../domain/nearest-key.js';
import { SPEC_LINT_MODES, type SpecLintMode } from '../domain/spec-lint.js';
import { parseRoster, vetRosterEndpoints, type Roster } from '../domain/roster.js';
import { DEFAULT_PACE_MARGIN, type BudgetRule } from '../domain/budget.js';
import { DEFAULT_BREAKER, type BreakerSettings } from '../domain/breaker.js';
import type { Price } from '../domain/spend.js';
import { SANDBOX_POLICIES, type SandboxPolicy } from '../platform/sandbox/bwrap.js';
import {
  AGENT_CLI_KEYS,
  configFileSchema,
  CONFIG_RUNNER_KEYS,
  DEFAULT_ENDPOINT,
  type Billing,
  type ConfigFile,
  type ConfigRunnerKey,
  type EndpointApi,
} from './config-schema.js';

/** A model endpoint (spec 04): from the config file or `GAFFER_MODEL_*`, never from a request. */
export interface ModelEndpoint {
  /** Base URL including the version path, e.g. `http://127.0.0.1:11434/v1`. */
  url: string;
  /** Wire API: inferred (anthropic for api.anthropic.com, else openai-compatible) unless given. */
  api: EndpointApi;
  /** The model used when a task names none; null when not configured. */
  model: string | null;
  /** The API key, resolved at load (file `key`, `key_env`'s variable, or `GAFFER_MODEL_KEY`). Never printed. */
  key: string | null;
  /** Where the key comes from, in words (`env GAFFER_MODEL_KEY`, `file`, `env OLLAMA_KEY (key_env)`); null when none is configured. */
  keyFrom: string | null;
}

/** One runner's settings (spec 04): agent CLIs are off until enabled. */
export interface RunnerConfig {
  enabled: boolean;
  /** `free` (local), `subscription` (a logged-in CLI) or `api` (pay per token). */
  billing: Billing;
  /** The CLI's own HOME/state dir, absolute; null = the user's own. */
  home: string | null;
  /** An agent CLI pointed at `models.<name>` instead of its vendor (spec 04, issue 14); null: its own default. */
  endpoint: string | null;
}

/** The effective configuration (spec 07 "Config"). */
export interface GafferConfig {
  workers: { max_parallel: number };
  spec_lint: SpecLintMode;
  /** token → owner. Empty: single-user, loopback only. */
  tokens: Record<string, string>;
  retention: { jobs: number };
  /** The runner for tasks that name none. */
  default_runner: string | null;
  /** `auto` (use bubblewrap where it works), `required` (refuse a worker without it), `off`. */
  sandbox: SandboxPolicy;
  /** Model endpoints by name; `default` is the builtin agent's. */
  models: Record<string, ModelEndpoint>;
  runners: Record<ConfigRunnerKey, RunnerConfig>;
  /** Defaults for requests that give none, seconds. */
  timeouts: { worker_s: number; verify_s: number };
  /**
   * `confirm_full_suite` (default true): after a verification with `related` scope, the final state
   * also runs the full suite once; without it the proof says `scope_related_only` (spec 03 "Scope").
   */
  verification: { confirm_full_suite: boolean };
  /** `max_body_bytes` (default 1 MiB): a larger request body is refused with 413 before it is read. */
  server: { max_body_bytes: number };
  /**
   * Network of sandboxed runs (spec 04): shell workers and the verification have none but a
   * loopback of their own unless `shell`/`verification` allow outbound; agent CLIs get outbound
   * with the host's loopback cut off, plus `loopback_ports` and the configured endpoints' loopback
   * ports.
   */
  network: { shell: boolean; verification: boolean; loopback_ports: number[] };
  /**
   * Per worker and per verification: at most `processes` processes, `memory_mb` of memory
   * (default a quarter of RAM), CPU weight `cpu_weight` (cgroup's scale, 100 = an equal share).
   */
  limits: { processes: number; memory_mb: number; cpu_weight: number };
  /** Variables passed to workers and the verification besides the allowlist (spec 04 "Environment"). */
  env: { pass: string[] };
  /** More folders a job may not be created for, absolute (besides the data dir, ~/.ssh, ~/.gnupg, ~/.config). */
  protected_paths: string[];
  /**
   * Worktree isolation (spec 06): where worktrees go (default `<data dir>/worktrees`), untracked files
   * copied in (gitignore patterns, besides the repository's `.worktreeinclude`), the setup and install
   * commands by workspace path (`*`: any), `deps` `link` or `copy`, `set_port` (PORT besides
   * GAFFER_PORT), and what `gaffer worktrees prune` keeps (`keep_days`, `max_gb`).
   */
  worktrees: {
    dir: string | null;
    include: string[];
    setup: Record<string, string>;
    install: Record<string, string>;
    deps: 'link' | 'copy';
    set_port: boolean;
    keep_days: number;
    max_gb: number | null;
  };
  /** Worktree fan-out: the gate commands safe to run in parallel worktrees, and how many tasks at once (default the worker cap). */
  fanout: { parallel_safe_gates: string[]; max_concurrency: number | null };
  /** The yes-gate (spec 05): `default: "required"` makes `approval: "auto"` ask for every task; an ask unanswered `timeout_s` is no. */
  approval: { default: 'auto' | 'required'; timeout_s: number };
  /** The handoff prompt's standing rules (spec 05): every agent worker is held to them. */
  handoff: { rules: string[] };
  /** spec 05 "Routing that learns": with `learn`, a type starts on the cheapest rung of its ladder whose logged acceptance clears `min_acceptance` (Wilson bound, ≥ 30 outcomes). */
  routing: { learn: boolean; min_acceptance: number };
  /** The roster (spec 05): routes the tasks that name no runner; null: none configured here (a `gaffer.roster.json` may still apply). */
  roster: Roster | null;
  /** Spend allowances per provider (or roster entry) over a `day`, ISO `week` or `5h-rolling` window (spec 07, issue 15). */
  budgets: BudgetRule[];
  /** Dollars per million tokens by model: an `api` runner that reports tokens but no cost is priced by it; else its cost is unknown. */
  prices: Record<string, Price>;
  /** The unattended breaker (spec 07): `trip_after` failed-outright unattended jobs in a row open it for `cooldown_s`. */
  breaker: BreakerSettings;
  /** Called when a job's approval asks open and when a job ends (spec 05): a command (`sh -c`, the event as JSON on stdin) and/or a webhook (POSTed the JSON). */
  notify: { command: string | null; webhook: string | null };
}

/** Where each value came from, for `gaffer doctor`. */
export type ConfigSource = 'default' | 'file' | 'env';

export interface LoadedConfig {
  config: GafferConfig;
  /** The config file read, when any. */
  file: string | null;
  /** Dotted key (`workers.max_parallel`, `runners.claude.enabled`, `models.default.key`) → source. */
  sources: Record<string, ConfigSource>;
}

export const DEFAULT_CONFIG: GafferConfig = {
  workers: { max_parallel: 2 },
  spec_lint: 'warn',
  tokens: {},
  retention: { jobs: 200 },
  default_runner: null,
  sandbox: 'auto',
  models: {},
  runners: {
    shell: { enabled: true, billing: 'free', home: null, endpoint: null },
    builtin: { enabled: true, billing: 'free', home: null, endpoint: null },
    ...(Object.fromEntries(
      AGENT_CLI_KEYS.map((k) => [k, { enabled: false, billing: 'subscription', home: null, endpoint: null }]),
    ) as Record<(typeof AGENT_CLI_KEYS)[number], RunnerConfig>),
  },
  timeouts: { worker_s: 900, verify_s: 300 },
  verification: { confirm_full_suite: true },
  server: { max_body_bytes: 1024 * 1024 },
  network: { shell: false, verification: false, loopback_ports: [] },
  limits: { processes: 1024, memory_mb: Math.max(256, Math.floor(totalmem() / 4 / 1024 ** 2)), cpu_weight: 50 },
  env: { pass: [] },
  protected_paths: [],
  worktrees: {
    dir: null,
    include: [],
    setup: {},
    install: {},
    deps: 'link',
    set_port: true,
    keep_days: 7,
    max_gb: null,
  },
  fanout: { parallel_safe_gates: [], max_concurrency: null },
  approval: { default: 'auto', timeout_s: 86_400 },
  routing: { learn: false, min_acceptance: 0.8 },
  roster: null,
  handoff: {
    rules: [
      'Make surgical changes: what the task needs, nothing around it.',
      'Touch only what the task names; leave everything else as it is.',
      'Never fake done: a check you did not run or a result you did not see is not done.',
      'A partial is fine: report it with the sticking point named.',
    ],
  },
  notify: { command: null, webhook: null },
  budgets: [],
  prices: {},
  breaker: { ...DEFAULT_BREAKER },
};

/**
 * Loads `gaffer.config.json`/`.yaml` from `--config`/`GAFFER_CONFIG` or the data dir, then applies
 * environment overrides: `GAFFER_MAX_PARALLEL`, `GAFFER_SPEC_LINT`, `GAFFER_TOKENS` (`token:owner,…`),
 * `GAFFER_DEFAULT_RUNNER`, `GAFFER_SANDBOX`, `GAFFER_MODEL_URL`/`_KEY`/`GAFFER_MODEL`/`_API` (the
 * `default` endpoint), `GAFFER_ENABLED_RUNNERS` (`claude,codex`: exactly these agent CLIs on),
 * `GAFFER_TIMEOUT_S`, `GAFFER_VERIFY_TIMEOUT_S`. Only this file and the environment can grant
 * power (spec 07); a workspace's `.gaffer/workspace.json` never can (workspace-hints.ts).
 */
export function loadConfig(opts: {
  dataDir: string;
  configPath?: string | undefined;
  env?: NodeJS.ProcessEnv;
}): LoadedConfig {
  const env = opts.env ?? process.env;
  const file = opts.configPath || env.GAFFER_CONFIG || findConfigFile(opts.dataDir);
  const config: GafferConfig = structuredClone(DEFAULT_CONFIG);
  const sources: Record<string, ConfigSource> = {};
  const set = (key: string, source: ConfigSource, apply: () => unknown): void => {
    apply();
    sources[key] = source;
  };

  const fromFile = file ? parseConfigFile(file) : null;
  if (file && fromFile) {
    applyFile(config, fromFile, dirname(resolve(file)), env, set, sources);
    if (fromFile.roster !== undefined)
      set('roster', 'file', () => (config.roster = parseRoster(fromFile.roster, `config ${file}`)));
  }
  applyEnv(config, env, set, sources);

  // spec 04: builtin bills `free` on a loopback endpoint and `api` elsewhere, unless configured
  if (sources['runners.builtin.billing'] === undefined) {
    const url = config.models[DEFAULT_ENDPOINT]?.url;
    config.runners.builtin.billing = url !== undefined && !isLoopbackUrl(url) ? 'api' : 'free';
  }
  for (const [key, r] of Object.entries(config.runners)) {
    if (r.endpoint !== null && config.models[r.endpoint] === undefined) {
      const names = Object.keys(config.models);
      throw new GafferError(
        'invalid_request',
        `runners.${key}.endpoint: "${r.endpoint}" is not a model endpoint (${names.length > 0 ? `models: ${names.join(', ')}` : 'no models are configured'}) — add models.${r.endpoint} with its url, or name another`,
        `runners.${key}.endpoint`,
      );
    }
  }
  // after the environment: GAFFER_MODEL_URL may be what makes models.default
  if (config.roster) vetRosterEndpoints(config.roster, config.models);
  for (const key of allKeys(config)) sources[key] ??= 'default';
  return { config, file: file || null, sources };
}

type Setter = (key: string, source: ConfigSource, apply: () => unknown) => void;

function applyFile(
  config: GafferConfig,
  c: ConfigFile,
  baseDir: string,
  env: NodeJS.ProcessEnv,
  set: Setter,
  sources: Record<string, ConfigSource>,
): void {
  if (c.workers?.max_parallel !== undefined)
    set('workers.max_parallel', 'file', () => (config.workers.max_parallel = c.workers?.max_parallel ?? 2));
  if (c.spec_lint !== undefined) set('spec_lint', 'file', () => (config.spec_lint = c.spec_lint ?? 'warn'));
  if (c.tokens !== undefined) set('tokens', 'file', () => (config.tokens = c.tokens ?? {}));
  if (c.retention?.jobs !== undefined)
    set('retention.jobs', 'file', () => (config.retention.jobs = c.retention?.jobs ?? 200));
  if (c.default_runner !== undefined)
    set('default_runner', 'file', () => (config.default_runner = c.default_runner ?? null));
  if (c.sandbox !== undefined) set('sandbox', 'file', () => (config.sandbox = c.sandbox ?? 'auto'));
  if (c.timeouts?.worker_s !== undefined)
    set('timeouts.worker_s', 'file', () => (config.timeouts.worker_s = c.timeouts?.worker_s ?? 900));
  if (c.timeouts?.verify_s !== undefined)
    set('timeouts.verify_s', 'file', () => (config.timeouts.verify_s = c.timeouts?.verify_s ?? 300));
  if (c.verification?.confirm_full_suite !== undefined) {
    set(
      'verification.confirm_full_suite',
      'file',
      () => (config.verification.confirm_full_suite = c.verification?.confirm_full_suite ?? true),
    );
  }
  if (c.server?.max_body_bytes !== undefined)
    set(
      'server.max_body_bytes',
      'file',
      () => (config.server.max_body_bytes = c.server?.max_body_bytes ?? 1024 * 1024),
    );
  if (c.network?.shell !== undefined)
    set('network.shell', 'file', () => (config.network.shell = c.network?.shell ?? false));
  if (c.network?.verification !== undefined)
    set('network.verification', 'file', () => (config.network.verification = c.network?.verification ?? false));
  if (c.network?.loopback_ports !== undefined)
    set('network.loopback_ports', 'file', () => (config.network.loopback_ports = c.network?.loopback_ports ?? []));
  if (c.limits?.processes !== undefined)
    set('limits.processes', 'file', () => (config.limits.processes = c.limits?.processes ?? 1024));
  if (c.limits?.memory_mb !== undefined)
    set('limits.memory_mb', 'file', () => (config.limits.memory_mb = c.limits?.memory_mb ?? config.limits.memory_mb));
  if (c.limits?.cpu_weight !== undefined)
    set('limits.cpu_weight', 'file', () => (config.limits.cpu_weight = c.limits?.cpu_weight ?? 50));
  if (c.env?.pass !== undefined) set('env.pass', 'file', () => (config.env.pass = c.env?.pass ?? []));
  if (c.protected_paths !== undefined)
    set(
      'protected_paths',
      'file',
      () => (config.protected_paths = (c.protected_paths ?? []).map((p) => expandHome(p, baseDir))),
    );
  const w = c.worktrees;
  if (w?.dir !== undefined)
    set('worktrees.dir', 'file', () => (config.worktrees.dir = expandHome(w.dir ?? '', baseDir)));
  if (w?.include !== undefined) set('worktrees.include', 'file', () => (config.worktrees.include = w.include ?? []));
  if (w?.setup !== undefined)
    set('worktrees.setup', 'file', () => (config.worktrees.setup = byWorkspace(w.setup ?? {}, baseDir)));
  if (w?.install !== undefined)
    set('worktrees.install', 'file', () => (config.worktrees.install = byWorkspace(w.install ?? {}, baseDir)));
  if (w?.deps !== undefined) set('worktrees.deps', 'file', () => (config.worktrees.deps = w.deps ?? 'link'));
  if (w?.set_port !== undefined)
    set('worktrees.set_port', 'file', () => (config.worktrees.set_port = w.set_port ?? true));
  if (w?.keep_days !== undefined)
    set('worktrees.keep_days', 'file', () => (config.worktrees.keep_days = w.keep_days ?? 7));
  if (w?.max_gb !== undefined) set('worktrees.max_gb', 'file', () => (config.worktrees.max_gb = w.max_gb ?? null));
  if (c.fanout?.parallel_safe_gates !== undefined)
    set(
      'fanout.parallel_safe_gates',
      'file',
      () => (config.fanout.parallel_safe_gates = c.fanout?.parallel_safe_gates ?? []),
    );
  if (c.fanout?.max_concurrency !== undefined)
    set('fanout.max_concurrency', 'file', () => (config.fanout.max_concurrency = c.fanout?.max_concurrency ?? null));
  if (c.notify?.command !== undefined)
    set('notify.command', 'file', () => (config.notify.command = c.notify?.command ?? null));
  if (c.notify?.webhook !== undefined)
    set('notify.webhook', 'file', () => (config.notify.webhook = checkUrl(c.notify?.webhook ?? '', 'notify.webhook')));
  if (c.approval?.default !== undefined)
    set('approval.default', 'file', () => (config.approval.default = c.approval?.default ?? 'auto'));
  if (c.routing?.learn !== undefined)
    set('routing.learn', 'file', () => (config.routing.learn = c.routing?.learn ?? false));
  if (c.routing?.min_acceptance !== undefined)
    set('routing.min_acceptance', 'file', () => (config.routing.min_acceptance = c.routing?.min_acceptance ?? 0.8));
  if (c.handoff?.rules !== undefined)
    set('handoff.rules', 'file', () => (config.handoff.rules = c.handoff?.rules ?? []));
  if (c.budgets !== undefined)
    set(
      'budgets',
      'file',
      () =>
        (config.budgets = (c.budgets ?? []).map((b) => ({
          provider: b.provider,
          entry: b.entry ?? null,
          window: b.window,
          unit: b.unit,
          limit: b.limit,
          pace_margin: b.pace_margin ?? DEFAULT_PACE_MARGIN,
        }))),
    );
  if (c.prices !== undefined) set('prices', 'file', () => (config.prices = c.prices ?? {}));
  if (c.breaker?.trip_after !== undefined)
    set(
      'breaker.trip_after',
      'file',
      () => (config.breaker.trip_after = c.breaker?.trip_after ?? DEFAULT_BREAKER.trip_after),
    );
  if (c.breaker?.cooldown_s !== undefined)
    set(
      'breaker.cooldown_s',
      'file',
      () => (config.breaker.cooldown_s = c.breaker?.cooldown_s ?? DEFAULT_BREAKER.cooldown_s),
    );
  if (c.approval?.timeout_s !== undefined)
    set('approval.timeout_s', 'file', () => (config.approval.timeout_s = c.approval?.timeout_s ?? 86_400));
  for (const [name, e] of Object.entries(c.models ?? {})) {
    const field = `models.${name}`;
    const keyFrom = e.key !== undefined ? 'file' : e.key_env !== undefined ? `env ${e.key_env} (key_env)` : null;
    const key = e.key ?? (e.key_env !== undefined ? env[e.key_env] || null : null);
    config.models[name] = {
      url: checkUrl(e.url, `${field}.url`),
      api: apiOf(e.api, e.url),
      model: e.model ?? null,
      key,
      keyFrom,
    };
    for (const part of ['url', 'api', 'model', 'key'])
      if (part !== 'key' || keyFrom !== null) sources[`${field}.${part}`] = 'file';
  }
  for (const key of CONFIG_RUNNER_KEYS) {
    const entry = c.runners?.[key];
    if (entry === undefined) continue;
    const target = config.runners[key];
    if (entry.enabled !== undefined)
      set(`runners.${key}.enabled`, 'file', () => (target.enabled = entry.enabled ?? false));
    if (entry.billing !== undefined)
      set(`runners.${key}.billing`, 'file', () => (target.billing = entry.billing ?? 'subscription'));
    const home = 'home' in entry ? entry.home : undefined;
    if (home !== undefined) set(`runners.${key}.home`, 'file', () => (target.home = expandHome(home, baseDir)));
    const endpoint = 'endpoint' in entry ? entry.endpoint : undefined;
    if (endpoint !== undefined) set(`runners.${key}.endpoint`, 'file', () => (target.endpoint = endpoint));
  }
}

function applyEnv(
  config: GafferConfig,
  env: NodeJS.ProcessEnv,
  set: Setter,
  sources: Record<string, ConfigSource>,
): void {
  if (env.GAFFER_MAX_PARALLEL)
    set(
      'workers.max_parallel',
      'env',
      () => (config.workers.max_parallel = intFromEnv(env, 'GAFFER_MAX_PARALLEL', 1, 64)),
    );
  if (env.GAFFER_SPEC_LINT)
    set('spec_lint', 'env', () => (config.spec_lint = oneOf(env, 'GAFFER_SPEC_LINT', SPEC_LINT_MODES)));
  if (env.GAFFER_TOKENS) set('tokens', 'env', () => (config.tokens = parseTokenList(env.GAFFER_TOKENS ?? '')));
  if (env.GAFFER_DEFAULT_RUNNER)
    set('default_runner', 'env', () => (config.default_runner = env.GAFFER_DEFAULT_RUNNER ?? null));
  if (env.GAFFER_SANDBOX)
    set('sandbox', 'env', () => (config.sandbox = oneOf(env, 'GAFFER_SANDBOX', SANDBOX_POLICIES)));
  if (env.GAFFER_TIMEOUT_S)
    set('timeouts.worker_s', 'env', () => (config.timeouts.worker_s = intFromEnv(env, 'GAFFER_TIMEOUT_S', 10, 86_400)));
  if (env.GAFFER_VERIFY_TIMEOUT_S)
    set(
      'timeouts.verify_s',
      'env',
      () => (config.timeouts.verify_s = intFromEnv(env, 'GAFFER_VERIFY_TIMEOUT_S', 10, 3_600)),
    );

  const modelEnv = {
    url: env.GAFFER_MODEL_URL,
    key: env.GAFFER_MODEL_KEY,
    model: env.GAFFER_MODEL,
    api: env.GAFFER_MODEL_API,
  };
  if (modelEnv.url || modelEnv.key || modelEnv.model || modelEnv.api) {
    const current = config.models[DEFAULT_ENDPOINT];
    if (!modelEnv.url && current === undefined) {
      const given = Object.entries({
        GAFFER_MODEL_KEY: modelEnv.key,
        GAFFER_MODEL: modelEnv.model,
        GAFFER_MODEL_API: modelEnv.api,
      })
        .filter(([, v]) => v)
        .map(([k]) => k);
      throw new GafferError(
        'invalid_request',
        `${given.join(', ')} set without GAFFER_MODEL_URL: set the endpoint's base URL too (or models.default.url in the config file)`,
        'GAFFER_MODEL_URL',
      );
    }
    const url = modelEnv.url ? checkUrl(modelEnv.url, 'GAFFER_MODEL_URL') : (current?.url ?? '');
    const endpoint: ModelEndpoint = current ?? {
      url,
      api: apiOf(undefined, url),
      model: null,
      key: null,
      keyFrom: null,
    };
    const name = `models.${DEFAULT_ENDPOINT}`;
    if (modelEnv.url) set(`${name}.url`, 'env', () => (endpoint.url = url));
    if (modelEnv.api)
      set(
        `${name}.api`,
        'env',
        () =>
          (endpoint.api = apiOf(
            oneOf(env, 'GAFFER_MODEL_API', ['openai', 'openai-compatible', 'anthropic', 'gemini']),
            url,
          )),
      );
    else if (modelEnv.url && sources[`${name}.api`] !== 'file') endpoint.api = apiOf(undefined, url);
    if (modelEnv.model) set(`${name}.model`, 'env', () => (endpoint.model = modelEnv.model ?? null));
    if (modelEnv.key)
      set(`${name}.key`, 'env', () => Object.assign(endpoint, { key: modelEnv.key, keyFrom: 'env GAFFER_MODEL_KEY' }));
    config.models[DEFAULT_ENDPOINT] = endpoint;
  }

  if (env.GAFFER_ENABLED_RUNNERS) {
    const names = env.GAFFER_ENABLED_RUNNERS.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const unknown = names.filter((n) => !(AGENT_CLI_KEYS as readonly string[]).includes(n));
    if (unknown.length > 0) {
      throw new GafferError(
        'invalid_request',
        `GAFFER_ENABLED_RUNNERS: unknown agent CLI(s) ${unknown.join(', ')} — expected some of ${AGENT_CLI_KEYS.join(', ')}`,
        'GAFFER_ENABLED_RUNNERS',
      );
    }
    for (const key of AGENT_CLI_KEYS)
      set(`runners.${key}.enabled`, 'env', () => (config.runners[key].enabled = names.includes(key)));
  }
}

/** Every dotted key of the effective config that has a source. */
function allKeys(config: GafferConfig): string[] {
  const keys = [
    'workers.max_parallel',
    'spec_lint',
    'tokens',
    'retention.jobs',
    'default_runner',
    'sandbox',
    'timeouts.worker_s',
    'timeouts.verify_s',
    'verification.confirm_full_suite',
    'server.max_body_bytes',
    'network.shell',
    'network.verification',
    'network.loopback_ports',
    'limits.processes',
    'limits.memory_mb',
    'limits.cpu_weight',
    'env.pass',
    'protected_paths',
    'worktrees.dir',
    'worktrees.include',
    'worktrees.setup',
    'worktrees.install',
    'worktrees.deps',
    'worktrees.set_port',
    'worktrees.keep_days',
    'worktrees.max_gb',
    'fanout.parallel_safe_gates',
    'fanout.max_concurrency',
    'roster',
    'handoff.rules',
    'budgets',
    'prices',
    'breaker.trip_after',
    'breaker.cooldown_s',
  ];
  for (const name of Object.keys(config.models))
    keys.push(...['url', 'api', 'model', 'key'].map((p) => `models.${name}.${p}`));
  for (const key of CONFIG_RUNNER_KEYS)
    keys.push(`runners.${key}.enabled`, `runners.${key}.billing`, `runners.${key}.home`, `runners.${key}.endpoint`);
  return keys;
}

/** A table keyed by workspace path (`*` kept): each path absolute, `~` expanded. */
function byWorkspace(table: Record<string, string>, baseDir: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(table).map(([key, command]) => [key === '*' ? key : expandHome(key, baseDir), command]),
  );
}

/** True when a URL's host is this machine (127.0.0.0/8, ::1, localhost). */
/** spec 02: the runner of a task that names none — the configured default, else builtin when a model endpoint is configured; null: such a task is refused. */
export function defaultRunnerOf(config: GafferConfig): string | null {
  return config.default_runner ?? (config.models[DEFAULT_ENDPOINT] ? 'builtin' : null);
}

export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || /^127\./.test(host);
  } catch {
    return false;
  }
}

/** A URL with any `user:password@` removed, safe to print. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username === '' && parsed.password === '') return url;
    parsed.username = '';
    parsed.password = '';
    return `${parsed.toString()} (credentials in the URL hidden)`;
  } catch {
    return '(not a URL)';
  }
}

function checkUrl(url: string, field: string): string {
  let parsed: URL | null = null;
  try {
    parsed = new URL(url.trim());
  } catch {
    parsed = null;
  }
  if (parsed === null || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    // the value is not echoed: a mistyped URL may carry a key
    throw new GafferError(
      'invalid_request',
      `${field} must be an http(s) base URL such as http://127.0.0.1:11434/v1`,
      field,
    );
  }
  return url.trim().replace(/\/+$/, '');
}

function apiOf(api: string | undefined, url: string): EndpointApi {
  if (api === 'anthropic') return 'anthropic';
  if (api === 'gemini') return 'gemini';
  if (api === 'openai' || api === 'openai-compatible') return 'openai-compatible';
  try {
    return new URL(url).hostname === 'api.anthropic.com' ? 'anthropic' : 'openai-compatible';
  } catch {
    return 'openai-compatible';
  }
}

function expandHome(path: string, baseDir: string): string {
  if (path === '~' || path.startsWith('~/')) return join(homedir(), path.slice(1));
  return isAbsolute(path) ? path : resolve(baseDir, path);
}

function intFromEnv(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number {
  const text = env[name] ?? '';
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < min || n > max)
    throw new GafferError('invalid_request', `${name} must be ${min}..${max}, got ${JSON.stringify(text)}`, name);
  return n;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[]): T {
  const value = env[name] as T;
  if (!allowed.includes(value))
    throw new GafferError(
      'invalid_request',
      `${name} must be ${allowed.join(', ')}, got ${JSON.stringify(value)}`,
      name,
    );
  return value;
}

function findConfigFile(dataDir: string): string | undefined {
  return ['gaffer.config.json', 'gaffer.config.yaml', 'gaffer.config.yml']
    .map((f) => join(dataDir, f))
    .find((f) => existsSync(f));
}

function parseConfigFile(file: string): ConfigFile {
  const parsed = configFileSchema.safeParse(readConfigFile(file));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  let path = (issue?.path ?? []).map(String);
  // a token is a secret: never echo one as part of a field name
  if (path[0] === 'tokens') path = ['tokens'];
  const field = path.join('.');
  const suggestion =
    issue?.code === 'unrecognized_keys' ? suggestKeys(issue.keys, knownKeysAt(configFileSchema, issue.path)) : '';
  const what =
    issue?.code === 'unrecognized_keys'
      ? `unknown key(s) ${issue.keys.join(', ')}${suggestion ? ` — ${suggestion}` : ''}`
      : (issue?.message ?? 'invalid');
  throw new GafferError('invalid_request', `config ${file}: ${field ? `${field}: ` : ''}${what}`, field || 'config');
}

function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new GafferError('invalid_request', `config ${file}: cannot read it: ${(err as Error).message}`, 'config');
  }
  const isYaml = /\.ya?ml$/i.test(file);
  try {
    return isYaml ? yaml().parse(text) : JSON.parse(text);
  } catch (err) {
    // the parser's message quotes the text around the error, which may be a key: give only where
    const linePos = (err as { linePos?: { line: number; col: number }[] }).linePos?.[0];
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    const where = linePos
      ? ` (line ${linePos.line}, column ${linePos.col})`
      : position !== undefined
        ? ` (at character ${position})`
        : '';
    throw new GafferError('invalid_request', `config ${file}: not valid ${isYaml ? 'YAML' : 'JSON'}${where}`, 'config');
  }
}

/** `token:owner,token2:owner2` → the token table. */
function parseTokenList(text: string): Record<string, string> {
  const tokens: Record<string, string> = {};
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const cut = pair.lastIndexOf(':');
    if (cut <= 0)
      throw new GafferError(
        'invalid_request',
        'GAFFER_TOKENS must be token:owner pairs separated by commas',
        'GAFFER_TOKENS',
      );
    tokens[pair.slice(0, cut)] = pair.slice(cut + 1);
  }
  return tokens;
}
