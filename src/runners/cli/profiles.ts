import type { AgentCliKey } from '../../domain/agent-cli-keys.js';
import { parseClaudeLine, parseCodexLine, parseGeminiLine, parseOpencodeLine, parseQwenLine } from './parsers.js';
import type { CliParser } from './parse-state.js';

/** A model endpoint a CLI is pointed at through its own base-URL settings (config or tests; never a request). */
export interface CliEndpoint {
  /** Base URL without the API version path, e.g. `http://127.0.0.1:8080`. */
  url: string;
  key: string;
  /** The model to ask for when the task names none. */
  model?: string | null;
}

/** What a profile adds to a run to point the CLI at an endpoint. */
export interface EndpointSetup {
  env: Record<string, string>;
  /** Extra argv elements placed where the template says `{endpoint}`. */
  args: string[];
  /** Put before the model name in `{model}` (opencode names models `provider/model`). */
  modelPrefix?: string;
}

/** A file a profile writes into its private state before a run (gemini's settings). */
export interface ProfileFile {
  /**
   * Relative to the CLI's home; written only when that home is gaffer's own (config `runners.<key>.home`),
   * never into the user's, and merged into what the file already holds (settings-file.ts): only the keys gaffer needs.
   */
  name: string;
  content: (endpoint: CliEndpoint | null) => string;
}

/** One agent CLI as data (spec 04 "Agent CLIs"). */
export interface CliProfile {
  key: AgentCliKey;
  label: string;
  /** npm package and the pinned version gaffer was checked against. */
  npmPackage: string;
  version: string;
  /** The program name looked up on PATH. */
  binary: string;
  /** SPDX-ish licence word (`proprietary` for a licence that is not an open one). */
  licence: string;
  versionArgs: string[];
  /** The version number in `binary versionArgs`' output (first capture group). */
  versionPattern: RegExp;
  /** False: no known headless invocation; refused at dispatch with that reason. */
  invocationKnown: boolean;
  /**
   * The headless argv after the binary. Placeholders, each a whole element: `{prompt}` (the
   * instruction, one element — or words, or nothing when it goes on stdin), `{model}` (expands to
   * `modelArgs` when a model is named, else nothing), `{resume}` (`resumeArgs` when resuming),
   * `{endpoint}` (the endpoint's args). Inside `modelArgs`/`resumeArgs`, `{model}`/`{session}` are substituted.
   */
  argv: string[];
  /** The argv when resuming, when it differs in more than `{resume}` (codex's `exec resume`). */
  resumeArgv?: string[];
  modelArgs: string[];
  resumeArgs: string[];
  /** How the instruction reaches the CLI (spec 04: opencode quotes a one-element prompt with spaces). */
  promptVia: 'argv' | 'stdin';
  canResume: boolean;
  /** Env every run gets: non-interactive switches, the CLI's own retries turned down (spec 04 "Rate limits"). */
  env: Record<string, string>;
  /** Env that only applies when gaffer runs as root. */
  rootEnv?: Record<string, string>;
  /** Below the user's HOME: the dirs it writes (kept writable in the sandbox when it runs in the user's home). */
  homeStateDirs: string[];
  /**
   * Inside gaffer's sandbox: argv elements replaced to turn the CLI's own sandbox off (codex brings
   * its own bwrap, which does not nest).
   */
  ownSandboxOff?: Record<string, string>;
  /** Extra state dirs (beyond HOME and XDG) as env var → path below the runner's home. */
  stateEnv?: Record<string, string>;
  /** How to point the CLI at a model endpoint. */
  endpoint: (endpoint: CliEndpoint, model: string | null) => EndpointSetup;
  /** The wire API it speaks to an endpoint gaffer configures (`models.<name>.api`); null: none gaffer's endpoints speak. */
  endpointApi: 'anthropic' | 'openai-compatible' | 'gemini';
  files?: ProfileFile[];
  /** Its exit code on an API error is the HTTP status mod 256 (gemini: 429 exits 173). */
  exitIsHttpStatus?: boolean;
  /** Reads one line of its structured output. */
  parser: CliParser;
}

/** The npm install command for a profile's pinned version. */
export function installHint(profile: CliProfile): string {
  return `npm i -g ${profile.npmPackage}@${profile.version}`;
}

const CLAUDE: CliProfile = {
  key: 'claude',
  label: 'Claude Code',
  npmPackage: '@anthropic-ai/claude-code',
  version: '2.1.197',
  binary: 'claude',
  licence: 'proprietary',
  versionArgs: ['--version'],
  versionPattern: /(\d+\.\d+\.\d+)/,
  invocationKnown: true,
  // stream-json without --verbose is refused by claude
  argv: [
    '-p',
    '{prompt}',
    '--output-format',
    'stream-json',
    '--verbose',
    '--permission-mode',
    'bypassPermissions',
    '{model}',
    '{resume}',
  ],
  modelArgs: ['--model', '{model}'],
  resumeArgs: ['--resume', '{session}'],
  promptVia: 'argv',
  canResume: true,
  env: {
    CLAUDE_CODE_MAX_RETRIES: '0',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
  },
  // bypassPermissions is refused as root unless the CLI is told it is sandboxed
  rootEnv: { IS_SANDBOX: '1' },
  homeStateDirs: ['.claude', '.config/claude'],
  endpointApi: 'anthropic',
  endpoint: (e) => ({ env: { ANTHROPIC_BASE_URL: e.url, ANTHROPIC_API_KEY: e.key }, args: [] }),
  parser: parseClaudeLine,
};

const CODEX: CliProfile = {
  key: 'codex',
  label: 'OpenAI Codex CLI',
  npmPackage: '@openai/codex',
  version: '0.171.0',
  binary: 'codex',
  licence: 'Apache-2.0',
  versionArgs: ['--version'],
  versionPattern: /(\d+\.\d+\.\d+)/,
  invocationKnown: true,
  // `--full-auto` no longer exists; analytics off (it phones home even with a local model)
  argv: [
    'exec',
    '--json',
    '--skip-git-repo-check',
    '-s',
    'workspace-write',
    '-c',
    'analytics.enabled=false',
    '{endpoint}',
    '{model}',
    '{prompt}',
  ],
  // `exec resume` takes no -s: the sandbox mode goes through -c
  resumeArgv: [
    'exec',
    'resume',
    '--json',
    '--skip-git-repo-check',
    '-c',
    'sandbox_mode="workspace-write"',
    '-c',
    'analytics.enabled=false',
    '{endpoint}',
    '{model}',
    '{resume}',
    '{prompt}',
  ],
  modelArgs: ['-m', '{model}'],
  resumeArgs: ['{session}'],
  promptVia: 'argv',
  canResume: true,
  env: {},
  // CODEX_HOME must not lie under TMPDIR, or codex's own sandbox breaks while it exits 0
  stateEnv: { CODEX_HOME: '.codex' },
  homeStateDirs: ['.codex'],
  ownSandboxOff: {
    'workspace-write': 'danger-full-access',
    'sandbox_mode="workspace-write"': 'sandbox_mode="danger-full-access"',
  },
  endpointApi: 'openai-compatible',
  endpoint: (e) => ({
    // OPENAI_BASE_URL is ignored and the chat wire API is gone: a custom provider is the only way
    env: { CODEX_ENDPOINT_API_KEY: e.key },
    args: [
      '-c',
      'model_provider="gaffer"',
      '-c',
      `model_providers.gaffer={name="gaffer",base_url=${JSON.stringify(`${e.url}/v1`)},wire_api="responses",env_key="CODEX_ENDPOINT_API_KEY",request_max_retries=0,stream_max_retries=0}`,
    ],
  }),
  parser: parseCodexLine,
};

const GEMINI: CliProfile = {
  key: 'gemini',
  label: 'Gemini CLI',
  npmPackage: '@google/gemini-cli',
  version: '0.61.0',
  binary: 'gemini',
  licence: 'Apache-2.0',
  versionArgs: ['--version'],
  versionPattern: /(\d+\.\d+\.\d+)/,
  invocationKnown: true,
  argv: ['-p', '{prompt}', '--yolo', '--skip-trust', '--output-format', 'stream-json', '{model}', '{resume}'],
  modelArgs: ['-m', '{model}'],
  resumeArgs: ['-r', '{session}'],
  promptVia: 'argv',
  canResume: true,
  env: { GEMINI_CLI_NO_RELAUNCH: 'true' },
  homeStateDirs: ['.gemini'],
  endpointApi: 'gemini',
  endpoint: (e) => ({
    env: { GOOGLE_GEMINI_BASE_URL: e.url, GEMINI_API_KEY: e.key, GEMINI_DEFAULT_AUTH_TYPE: 'gemini-api-key' },
    args: [],
  }),
  files: [
    {
      // one attempt per request: gaffer, not the CLI, decides about rate limits. (A system settings file
      // via GEMINI_CLI_SYSTEM_SETTINGS_PATH is skipped when any parent is world-writable, e.g. under /tmp.)
      name: '.gemini/settings.json',
      content: (endpoint) =>
        JSON.stringify({
          general: { maxAttempts: 1, retryFetchErrors: false, disableAutoUpdate: true },
          privacy: { usageStatisticsEnabled: false },
          ...(endpoint === null ? {} : { security: { auth: { selectedType: 'gemini-api-key' } } }),
        }),
    },
  ],
  exitIsHttpStatus: true,
  parser: parseGeminiLine,
};

const QWEN: CliProfile = {
  key: 'qwen',
  label: 'Qwen Code',
  npmPackage: '@qwen-code/qwen-code',
  version: '0.15.10',
  binary: 'qwen',
  licence: 'Apache-2.0',
  versionArgs: ['--version'],
  versionPattern: /(\d+\.\d+\.\d+)/,
  invocationKnown: true,
  argv: ['-p', '{prompt}', '--yolo', '--output-format', 'stream-json', '{model}', '{resume}'],
  modelArgs: ['-m', '{model}'],
  resumeArgs: ['-r', '{session}'],
  promptVia: 'argv',
  canResume: true,
  env: {},
  homeStateDirs: ['.qwen'],
  endpointApi: 'openai-compatible',
  endpoint: (e, model) => ({
    env: { OPENAI_BASE_URL: `${e.url}/v1`, OPENAI_API_KEY: e.key, ...(model ? { OPENAI_MODEL: model } : {}) },
    args: [],
  }),
  parser: parseQwenLine,
};

const OPENCODE: CliProfile = {
  key: 'opencode',
  label: 'opencode',
  npmPackage: 'opencode-ai',
  version: '1.18.33',
  binary: 'opencode',
  licence: 'MIT',
  versionArgs: ['--version'],
  versionPattern: /(\d+\.\d+\.\d+)/,
  invocationKnown: true,
  argv: ['run', '--format', 'json', '{model}', '{resume}'],
  modelArgs: ['-m', '{model}'],
  resumeArgs: ['-s', '{session}'],
  // a single argv prompt with spaces reaches the model wrapped in quotes (spec 04)
  promptVia: 'stdin',
  canResume: true,
  env: { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_SHARE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1' },
  homeStateDirs: ['.local/share/opencode', '.local/state/opencode', '.cache/opencode', '.config/opencode'],
  endpointApi: 'openai-compatible',
  endpoint: (e, model) => ({
    modelPrefix: 'gaffer/',
    env: {
      OPENCODE_CONFIG_CONTENT: JSON.stringify({
        $schema: 'https://opencode.ai/config.json',
        autoupdate: false,
        share: 'disabled',
        provider: {
          gaffer: {
            npm: '@ai-sdk/openai-compatible',
            name: 'gaffer endpoint',
            options: { baseURL: `${e.url}/v1`, apiKey: e.key },
            models: model ? { [model]: { name: model } } : {},
          },
        },
        ...(model ? { model: `gaffer/${model}` } : {}),
      }),
    },
    args: [],
  }),
  parser: parseOpencodeLine,
};

/** The agent CLIs of this build (spec 04's first five), by key. */
export const CLI_PROFILES: ReadonlyMap<string, CliProfile> = new Map(
  [CLAUDE, CODEX, GEMINI, QWEN, OPENCODE].map((p) => [p.key, p]),
);

/** The profile for `key`, when there is one. */
export function getCliProfile(key: string): CliProfile | undefined {
  return CLI_PROFILES.get(key);
}
