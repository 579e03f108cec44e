import { z } from 'zod';
import { SPEC_LINT_MODES, type SpecLintMode } from '../domain/spec-lint.js';
import { AGENT_CLI_KEYS } from '../domain/agent-cli-keys.js';
import { BILLINGS } from '../platform/process/billing-env.js';
import { SANDBOX_POLICIES, type SandboxPolicy } from '../platform/sandbox/bwrap.js';
import { BUDGET_UNITS, BUDGET_WINDOWS } from '../domain/budget.js';

// the keys live in domain so the runner profiles name them without importing config
export { AGENT_CLI_KEYS, type AgentCliKey } from '../domain/agent-cli-keys.js';

/** Every runner the config can set up. */
export const CONFIG_RUNNER_KEYS = ['shell', 'builtin', ...AGENT_CLI_KEYS] as const;
export type ConfigRunnerKey = (typeof CONFIG_RUNNER_KEYS)[number];

export { BILLINGS, type Billing } from '../platform/process/billing-env.js';

/** The wire API of a model endpoint: the builtin agent speaks the first two; `gemini` is for the Gemini CLI (`runners.gemini.endpoint`). */
export const ENDPOINT_APIS = ['openai-compatible', 'anthropic', 'gemini'] as const;
export type EndpointApi = (typeof ENDPOINT_APIS)[number];

/** The endpoint the builtin agent uses; `GAFFER_MODEL_*` override this one. */
export const DEFAULT_ENDPOINT = 'default';

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ENDPOINT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/;

const endpointSchema = z
  .strictObject({
    url: z.string().min(1),
    api: z.enum(['openai', 'openai-compatible', 'anthropic', 'gemini']).optional(),
    key_env: z.string().regex(ENV_NAME, 'key_env must be an environment variable name').optional(),
    key: z.string().min(1).optional(),
    model: z.string().min(1).max(200).optional(),
  })
  .refine((e) => e.key === undefined || e.key_env === undefined, {
    message: 'give key or key_env, not both',
    path: ['key'],
  });

const localRunnerSchema = z.strictObject({ enabled: z.boolean().optional(), billing: z.enum(BILLINGS).optional() });
const cliRunnerSchema = localRunnerSchema.extend({
  home: z.string().min(1).max(4096).optional(),
  endpoint: z.string().min(1).max(100).optional(),
});

/** `gaffer.config.json` / `.yaml`: every key it may hold (unknown keys are refused, named). */
export const configFileSchema = z.strictObject({
  workers: z.strictObject({ max_parallel: z.number().int().min(1).max(64).optional() }).optional(),
  spec_lint: z.enum(SPEC_LINT_MODES as [SpecLintMode, ...SpecLintMode[]]).optional(),
  tokens: z.record(z.string().min(16, 'tokens must be at least 16 characters'), z.string().min(1).max(100)).optional(),
  retention: z.strictObject({ jobs: z.number().int().min(1).max(100_000).optional() }).optional(),
  default_runner: z.string().min(1).nullable().optional(),
  sandbox: z.enum(SANDBOX_POLICIES as [SandboxPolicy, ...SandboxPolicy[]]).optional(),
  models: z
    .record(z.string().regex(ENDPOINT_NAME, 'endpoint names are 1..40 letters, digits, - or _'), endpointSchema)
    .optional(),
  runners: z
    .strictObject({
      shell: localRunnerSchema.optional(),
      builtin: localRunnerSchema.optional(),
      claude: cliRunnerSchema.optional(),
      codex: cliRunnerSchema.optional(),
      gemini: cliRunnerSchema.optional(),
      qwen: cliRunnerSchema.optional(),
      opencode: cliRunnerSchema.optional(),
    })
    .optional(),
  timeouts: z
    .strictObject({
      worker_s: z.number().int().min(10).max(86_400).optional(),
      verify_s: z.number().int().min(10).max(3_600).optional(),
    })
    .optional(),
  verification: z.strictObject({ confirm_full_suite: z.boolean().optional() }).optional(),
  server: z
    .strictObject({
      max_body_bytes: z
        .number()
        .int()
        .min(1024)
        .max(1024 ** 3)
        .optional(),
    })
    .optional(),
  network: z
    .strictObject({
      shell: z.boolean().optional(),
      verification: z.boolean().optional(),
      loopback_ports: z.array(z.number().int().min(1).max(65_535)).max(64).optional(),
    })
    .optional(),
  limits: z
    .strictObject({
      processes: z.number().int().min(8).max(100_000).optional(),
      memory_mb: z
        .number()
        .int()
        .min(64)
        .max(1024 * 1024)
        .optional(),
      cpu_weight: z.number().int().min(1).max(10_000).optional(),
    })
    .optional(),
  env: z
    .strictObject({
      pass: z.array(z.string().regex(ENV_NAME, 'env.pass holds environment variable names')).max(200).optional(),
    })
    .optional(),
  protected_paths: z.array(z.string().min(1).max(4096)).max(200).optional(),
  worktrees: z
    .strictObject({
      dir: z.string().min(1).max(4096).optional(),
      include: z.array(z.string().min(1).max(4096)).max(200).optional(),
      setup: z.record(z.string().min(1).max(4096), z.string().min(1).max(4096)).optional(),
      install: z.record(z.string().min(1).max(4096), z.string().min(1).max(4096)).optional(),
      deps: z.enum(['link', 'copy']).optional(),
      set_port: z.boolean().optional(),
      keep_days: z.number().int().min(0).max(3650).optional(),
      max_gb: z.number().min(0.1).max(100_000).optional(),
    })
    .optional(),
  notify: z
    .strictObject({
      command: z.string().min(1).max(4096).optional(),
      webhook: z.string().min(1).max(2048).optional(),
    })
    .optional(),
  approval: z
    .strictObject({
      default: z.enum(['auto', 'required']).optional(),
      timeout_s: z
        .number()
        .int()
        .min(1)
        .max(30 * 86_400)
        .optional(),
    })
    .optional(),
  routing: z
    .strictObject({
      learn: z.boolean().optional(),
      min_acceptance: z.number().min(0).max(1).optional(),
    })
    .optional(),
  handoff: z
    .strictObject({
      rules: z.array(z.string().trim().min(1).max(500)).max(50).optional(),
    })
    .optional(),
  // issue 15 (spec 07 "Budgets and the breaker"): spend allowances per provider (or roster entry) and window
  budgets: z
    .array(
      z.strictObject({
        provider: z.string().min(1).max(100),
        entry: z.string().min(1).max(64).optional(),
        window: z.enum(BUDGET_WINDOWS),
        unit: z.enum(BUDGET_UNITS),
        limit: z.number().positive(),
        pace_margin: z.number().min(0).max(1).optional(),
      }),
    )
    .max(100)
    .optional(),
  // dollars per million tokens by model, for api runners that report tokens but no cost
  prices: z
    .record(
      z.string().min(1).max(200),
      z.strictObject({ input_per_mtok: z.number().min(0), output_per_mtok: z.number().min(0) }),
    )
    .optional(),
  breaker: z
    .strictObject({
      trip_after: z.number().int().min(1).max(100).optional(),
      cooldown_s: z
        .number()
        .int()
        .min(0)
        .max(30 * 86_400)
        .optional(),
    })
    .optional(),
  // checked whole by parseRoster (its refusals name the entry and the fix)
  roster: z.unknown().optional(),
  fanout: z
    .strictObject({
      parallel_safe_gates: z.array(z.string().min(1).max(4096)).max(200).optional(),
      max_concurrency: z.number().int().min(1).max(64).optional(),
    })
    .optional(),
});

export type ConfigFile = z.infer<typeof configFileSchema>;
