import { buildWorkerEnv } from './env.js';

/** Who pays for a runner's model calls (spec 04 "Environment and billing"). */
export const BILLINGS = ['free', 'subscription', 'api'] as const;
export type Billing = (typeof BILLINGS)[number];

/**
 * Paid-API credentials a `subscription` runner must not see: with one in its environment an agent
 * CLI may silently bill an API instead of using its login (spec 04). Removed for every
 * subscription runner — a CLI may read another vendor's key (qwen and opencode read OpenAI's).
 */
export const PAID_API_KEYS: readonly string[] = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'OPENAI_API_KEY',
  'CODEX_API_KEY',
  'AZURE_OPENAI_API_KEY',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GOOGLE_GENERATIVE_AI_API_KEY',
  'DASHSCOPE_API_KEY',
  'OPENROUTER_API_KEY',
  'GROQ_API_KEY',
  'MISTRAL_API_KEY',
  'DEEPSEEK_API_KEY',
  'XAI_API_KEY',
  'TOGETHER_API_KEY',
  'FIREWORKS_API_KEY',
  'CEREBRAS_API_KEY',
  'PERPLEXITY_API_KEY',
  'COHERE_API_KEY',
  'MOONSHOT_API_KEY',
  'ZHIPU_API_KEY',
];

/** Per agent CLI: switches that move it onto a paid cloud API (Bedrock, Vertex) although it is logged in. */
const PAID_API_SWITCHES: Readonly<Record<string, readonly string[]>> = {
  claude: ['CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX', 'CLAUDE_CODE_USE_FOUNDRY', 'AWS_BEARER_TOKEN_BEDROCK'],
  gemini: ['GOOGLE_GENAI_USE_VERTEXAI'],
};

/**
 * Each runner's own documented variables (spec 04), passed besides the common allowlist (env.ts):
 * `any` whatever its billing — where the CLI keeps its state and login; `api` only for billing
 * `api` — the keys and base URLs it bills through. A name here that gaffer held back at start comes
 * from memory (scrub-env.ts). Bedrock, Vertex and the like need cloud credentials: name them in
 * config `env.pass`.
 */
const RUNNER_ENV: Readonly<Record<string, { any: readonly string[]; api: readonly string[] }>> = {
  claude: { any: ['CLAUDE_CONFIG_DIR'], api: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL'] },
  codex: { any: ['CODEX_HOME'], api: ['OPENAI_API_KEY', 'CODEX_API_KEY', 'OPENAI_BASE_URL'] },
  gemini: {
    any: ['GEMINI_CLI_HOME', 'GOOGLE_CLOUD_PROJECT', 'GOOGLE_CLOUD_LOCATION'],
    api: ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GEMINI_BASE_URL'],
  },
  qwen: { any: ['QWEN_HOME'], api: ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_MODEL', 'DASHSCOPE_API_KEY'] },
  // opencode picks its provider by which key is set
  opencode: { any: ['OPENCODE_CONFIG', 'OPENCODE_CONFIG_DIR'], api: PAID_API_KEYS },
};

/** The names a runner gets besides the common allowlist, for its billing. */
export function listRunnerEnvNames(runnerKey: string, billing: Billing): string[] {
  const own = RUNNER_ENV[runnerKey];
  if (own === undefined) return [];
  return billing === 'api' ? [...own.any, ...own.api] : [...own.any];
}

/** The names removed from a runner's environment for its billing (beyond gaffer's own secrets). */
export function keysRemovedFor(runnerKey: string, billing: Billing): string[] {
  if (billing !== 'subscription') return [];
  return [...PAID_API_KEYS, ...(PAID_API_SWITCHES[runnerKey] ?? [])];
}

/**
 * A runner's child environment (spec 04): the allowlist, config `env.pass` and the runner's own
 * variables for its billing (buildWorkerEnv), never gaffer's own secrets or the repository-locating
 * `GIT_*` variables, and for a `subscription` runner never a paid-API key (not even through
 * `env.pass`), so it uses its login or fails loud.
 */
export function envForRunner(runnerKey: string, billing: Billing, parentEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return buildWorkerEnv(parentEnv, {
    allow: listRunnerEnvNames(runnerKey, billing),
    removeKeys: keysRemovedFor(runnerKey, billing),
  });
}
