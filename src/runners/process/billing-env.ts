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

/** The names removed from a runner's environment for its billing (beyond gaffer's own secrets). */
export function keysRemovedFor(runnerKey: string, billing: Billing): string[] {
  if (billing !== 'subscription') return [];
  return [...PAID_API_KEYS, ...(PAID_API_SWITCHES[runnerKey] ?? [])];
}

/**
 * A runner's child environment (spec 04): the parent's minus gaffer's own secrets and the
 * repository-locating `GIT_*` variables (buildWorkerEnv), and for a `subscription` runner minus
 * every paid-API key, so it uses its login or fails loud.
 */
export function envForRunner(runnerKey: string, billing: Billing, parentEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return buildWorkerEnv(parentEnv, { removeKeys: keysRemovedFor(runnerKey, billing) });
}
