import { cliRunnerOptions } from '../../runners/cli/config.js';
import { DEFAULT_ENDPOINT } from '../../config/config-schema.js';
import { defaultRunnerOf, loadConfig, type GafferConfig, type LoadedConfig } from '../../config/config.js';
import { resolveDataDir } from '../../platform/files/data-dir.js';
import { readSecret } from '../../config/local-secret.js';
import { runnerDisabledBy } from '../../config/describe-config.js';
import { Engine } from '../../engine/engine.js';
import type { WorktreeSettings } from '../../engine/placement/worktree.js';
import { createRunners, type RunnerSetup } from '../../runners/index.js';
import { registerSecretValues } from '../../platform/process/env.js';
import { createSandbox, type Sandbox } from '../../platform/sandbox/sandbox.js';
import type { Runner } from '../../runners/contract.js';
import type { ClusterSettings } from '../../engine/execution/bullmq.js';
import { runLimitsFromConfig, setRunLimits } from '../../platform/process/limits.js';
import { networkSetupOf, verificationNetworkOf } from '../../config/network-config.js';
import { readServerRecord } from '../http/serve.js';
import { HttpApi, LocalApi, type CliApi } from './api.js';
import { writeTo } from './safe-output.js';

/** Global flags every command takes. */
export interface GlobalFlags {
  json?: boolean;
  dataDir?: string;
  url?: string;
  token?: string;
  config?: string;
}

/**
 * What every command reaches: output streams, `--json`, and gaffer itself — a server when there is
 * one (`--url`, `GAFFER_URL`, or the `server.json` a live `gaffer serve` wrote into this data dir),
 * else an engine in this process. One data dir is always one engine's truth (spec 02).
 */
export class CliContext {
  readonly json: boolean;
  readonly dataDir: string;
  readonly #flags: GlobalFlags;
  #api: Promise<CliApi> | null = null;
  #engine: Promise<Engine> | null = null;
  #config: LoadedConfig | null = null;

  constructor(flags: GlobalFlags) {
    this.#flags = flags;
    this.json = flags.json ?? false;
    this.dataDir = resolveDataDir(flags.dataDir);
  }

  /** The effective config (data dir file or --config, then the environment). */
  get config(): LoadedConfig {
    if (this.#config === null) {
      this.#config = loadConfig({ dataDir: this.dataDir, configPath: this.#flags.config });
      // a key read through key_env sits in a variable of any name: workers must not inherit it
      const { tokens, models } = this.#config.config;
      registerSecretValues([...Object.keys(tokens), ...Object.values(models).map((m) => m.key)]);
    }
    return this.#config;
  }

  /** `--config`, when given. */
  get configPath(): string | undefined {
    return this.#flags.config;
  }

  /** The server's URL when the CLI should use one. */
  serverUrl(): string | null {
    // an empty GAFFER_URL= is unset, not "no server": fall through to server.json
    return this.#flags.url || process.env.GAFFER_URL || readServerRecord(this.dataDir)?.url || null;
  }

  /** gaffer: the server when there is one, else this process's engine. */
  api(): Promise<CliApi> {
    this.#api ??= (async () => {
      const url = this.serverUrl();
      if (url) return new HttpApi(url, this.#flags.token || process.env.GAFFER_TOKEN || this.#localSecretFor(url));
      return new LocalApi(await this.engine());
    })();
    return this.#api;
  }

  /**
   * The data dir's secret when `url` is the server this data dir recorded (server.json): the
   * secret goes to that server only, never to one `--url` points elsewhere.
   */
  #localSecretFor(url: string): string | null {
    const recorded = readServerRecord(this.dataDir)?.url;
    return recorded !== undefined && sameOrigin(recorded, url) ? readSecret(this.dataDir) : null;
  }

  /**
   * An engine in this process (serve and mcp always run one, `longLived`); opening it recovers
   * orphaned jobs.
   */
  engine(longLived = false, cluster?: ClusterSettings): Promise<Engine> {
    const { config } = this.config;
    // issue 11: every worker and verification this engine runs gets the config's limits
    setRunLimits(runLimitsFromConfig(config.limits));
    // issue 12: one sandbox, made once, for every runner and the verification
    const sandbox = createSandbox(config.sandbox);
    this.#engine ??= Engine.open({
      spawner: longLived,
      dataDir: this.dataDir,
      ...(cluster ? { cluster } : {}),
      runners: this.#runners(sandbox),
      maxParallel: config.workers.max_parallel,
      specLint: config.spec_lint,
      retentionJobs: config.retention.jobs,
      defaultRunner: defaultRunnerOf(config),
      timeouts: config.timeouts,
      confirmFullSuite: config.verification.confirm_full_suite,
      verificationNetwork: verificationNetworkOf(config),
      sandbox,
      protect: { configFile: this.config.file, protectedPaths: config.protected_paths },
      worktrees: worktreeSettingsOf(config),
      approval: { default: config.approval.default, timeoutS: config.approval.timeout_s },
      roster: config.roster,
      routing: { learn: config.routing.learn, minAcceptance: config.routing.min_acceptance },
      handoffRules: config.handoff.rules,
      billing: Object.fromEntries(Object.entries(config.runners).map(([key, r]) => [key, r.billing])),
      notify: config.notify,
      operations: { budgets: config.budgets, prices: config.prices, breaker: config.breaker },
      config,
    });
    return this.#engine;
  }

  /** The runners a `gaffer node` offers (spec 09), set up from this machine's config as the engine's are. */
  nodeRunners(keys: readonly string[]): Map<string, Runner> {
    const { config } = this.config;
    setRunLimits(runLimitsFromConfig(config.limits));
    const all = this.#runners(createSandbox(config.sandbox));
    return new Map(
      keys.flatMap((k) => {
        const runner = all.get(k);
        return runner ? [[k, runner] as const] : [];
      }),
    );
  }

  #runners(sandbox: Sandbox): Map<string, Runner> {
    const { config } = this.config;
    const disabledBy = (key: string) => runnerDisabledBy(this.config, key);
    const { builtin } = builtinSetup(config);
    return createRunners({
      sandbox,
      network: networkSetupOf(config),
      shell: { enabled: config.runners.shell.enabled, disabledBy: disabledBy('shell') },
      builtin: { ...builtin, enabled: config.runners.builtin.enabled, disabledBy: disabledBy('builtin') },
      cli: cliRunnerOptions(config, disabledBy),
    });
  }

  /** Answers on stdout. */
  out(text: string): void {
    writeTo(process.stdout, `${text}\n`);
  }

  /** Human messages and errors on stderr. */
  err(text: string): void {
    writeTo(process.stderr, `${text}\n`);
  }

  async close(): Promise<void> {
    // an engine that failed to open (a cluster's Redis away) has nothing to close: its failure was the command's
    const engine = await this.#engine?.catch(() => null);
    await engine?.close();
  }
}

/**
 * The builtin agent's endpoint from the config (env `GAFFER_MODEL_*` already folded in; none: its own
 * env default), and every `models.<name>` it can speak, for the roster entries and the judge that name one.
 */
function builtinSetup(config: GafferConfig): { builtin: NonNullable<RunnerSetup['builtin']> } {
  const spoken = Object.entries(config.models).flatMap(([name, m]) =>
    m.api === 'gemini' ? [] : [[name, { api: m.api, url: m.url, key: m.key, model: m.model }] as const],
  );
  const endpoints = Object.fromEntries(spoken);
  const e = endpoints[DEFAULT_ENDPOINT];
  // the builtin agent speaks OpenAI-compatible or Anthropic; a gemini endpoint is for the Gemini CLI (doctor says so)
  return { builtin: { ...(e !== undefined && e.model !== null ? { endpoint: e } : {}), endpoints } };
}

function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}

/** Config `worktrees` and `fanout` as the engine takes them (spec 06). */
function worktreeSettingsOf(config: GafferConfig): WorktreeSettings {
  const w = config.worktrees;
  return {
    dir: w.dir,
    include: w.include,
    setup: w.setup,
    install: w.install,
    deps: w.deps,
    setPort: w.set_port,
    keepDays: w.keep_days,
    maxGb: w.max_gb,
    parallelSafeGates: config.fanout.parallel_safe_gates,
    maxConcurrency: config.fanout.max_concurrency,
  };
}
