import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { GafferError } from '../domain/errors.js';
import { SPEC_LINT_MODES, type SpecLintMode } from '../domain/spec-lint.js';

/** The effective configuration (spec 07 "Config"); what this build reads of it. */
export interface GafferConfig {
  workers: { max_parallel: number };
  spec_lint: SpecLintMode;
  /** token → owner. Empty: single-user, loopback only. */
  tokens: Record<string, string>;
  retention: { jobs: number };
  /** The runner for tasks that name none. */
  default_runner: string | null;
}

/** Where each value came from, for `gaffer doctor`. */
export type ConfigSource = 'default' | 'file' | 'env';

export interface LoadedConfig {
  config: GafferConfig;
  /** The config file read, when any. */
  file: string | null;
  sources: Record<string, ConfigSource>;
}

const fileSchema = z.strictObject({
  workers: z.strictObject({ max_parallel: z.number().int().min(1).max(64).optional() }).optional(),
  spec_lint: z.enum(SPEC_LINT_MODES as [SpecLintMode, ...SpecLintMode[]]).optional(),
  tokens: z.record(z.string().min(16, 'tokens must be at least 16 characters'), z.string().min(1).max(100)).optional(),
  retention: z.strictObject({ jobs: z.number().int().min(1).max(100_000).optional() }).optional(),
  default_runner: z.string().min(1).nullable().optional(),
});

export const DEFAULT_CONFIG: GafferConfig = {
  workers: { max_parallel: 2 },
  spec_lint: 'warn',
  tokens: {},
  retention: { jobs: 200 },
  default_runner: null,
};

/**
 * Loads `gaffer.config.json`/`.yaml` from `--config`/`GAFFER_CONFIG` or the data dir, then applies
 * environment overrides (`GAFFER_MAX_PARALLEL`, `GAFFER_SPEC_LINT`, `GAFFER_TOKENS` = `token:owner,…`,
 * `GAFFER_DEFAULT_RUNNER`). Only this file and the environment can grant power (spec 07).
 */
export function loadConfig(opts: { dataDir: string; configPath?: string | undefined; env?: NodeJS.ProcessEnv }): LoadedConfig {
  const env = opts.env ?? process.env;
  const file = opts.configPath ?? env.GAFFER_CONFIG ?? findConfigFile(opts.dataDir);
  const config: GafferConfig = structuredClone(DEFAULT_CONFIG);
  const sources: Record<string, ConfigSource> = { 'workers.max_parallel': 'default', spec_lint: 'default', tokens: 'default', 'retention.jobs': 'default', default_runner: 'default' };

  if (file) {
    const parsed = fileSchema.safeParse(readConfigFile(file));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.join('.') ?? '';
      const what = issue?.code === 'unrecognized_keys' ? `unknown key(s) ${issue.keys.join(', ')}` : (issue?.message ?? 'invalid');
      throw new GafferError('invalid_request', `config ${file}: ${field ? `${field}: ` : ''}${what}`, field || 'config');
    }
    const c = parsed.data;
    if (c.workers?.max_parallel !== undefined) set('workers.max_parallel', 'file', () => (config.workers.max_parallel = c.workers?.max_parallel ?? 2));
    if (c.spec_lint !== undefined) set('spec_lint', 'file', () => (config.spec_lint = c.spec_lint ?? 'warn'));
    if (c.tokens !== undefined) set('tokens', 'file', () => (config.tokens = c.tokens ?? {}));
    if (c.retention?.jobs !== undefined) set('retention.jobs', 'file', () => (config.retention.jobs = c.retention?.jobs ?? 200));
    if (c.default_runner !== undefined) set('default_runner', 'file', () => (config.default_runner = c.default_runner ?? null));
  }

  if (env.GAFFER_MAX_PARALLEL) {
    const n = Number(env.GAFFER_MAX_PARALLEL);
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new GafferError('invalid_request', `GAFFER_MAX_PARALLEL must be 1..64, got ${JSON.stringify(env.GAFFER_MAX_PARALLEL)}`, 'GAFFER_MAX_PARALLEL');
    set('workers.max_parallel', 'env', () => (config.workers.max_parallel = n));
  }
  if (env.GAFFER_SPEC_LINT) {
    const mode = env.GAFFER_SPEC_LINT as SpecLintMode;
    if (!SPEC_LINT_MODES.includes(mode)) throw new GafferError('invalid_request', `GAFFER_SPEC_LINT must be off, warn or enforce, got ${JSON.stringify(mode)}`, 'GAFFER_SPEC_LINT');
    set('spec_lint', 'env', () => (config.spec_lint = mode));
  }
  if (env.GAFFER_TOKENS) set('tokens', 'env', () => (config.tokens = parseTokenList(env.GAFFER_TOKENS ?? '')));
  if (env.GAFFER_DEFAULT_RUNNER) set('default_runner', 'env', () => (config.default_runner = env.GAFFER_DEFAULT_RUNNER ?? null));
  return { config, file: file ?? null, sources };

  function set(key: string, source: ConfigSource, apply: () => unknown): void {
    apply();
    sources[key] = source;
  }
}

function findConfigFile(dataDir: string): string | undefined {
  return ['gaffer.config.json', 'gaffer.config.yaml', 'gaffer.config.yml'].map((f) => join(dataDir, f)).find((f) => existsSync(f));
}

function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new GafferError('invalid_request', `config ${file}: cannot read it: ${(err as Error).message}`, 'config');
  }
  try {
    return /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new GafferError('invalid_request', `config ${file}: not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${(err as Error).message}`, 'config');
  }
}

/** `token:owner,token2:owner2` → the token table. */
function parseTokenList(text: string): Record<string, string> {
  const tokens: Record<string, string> = {};
  for (const pair of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const cut = pair.lastIndexOf(':');
    if (cut <= 0) throw new GafferError('invalid_request', 'GAFFER_TOKENS must be token:owner pairs separated by commas', 'GAFFER_TOKENS');
    tokens[pair.slice(0, cut)] = pair.slice(cut + 1);
  }
  return tokens;
}
