import { CONFIG_RUNNER_KEYS } from './config-schema.js';
import { redactUrl, type ConfigSource, type LoadedConfig, type RunnerConfig } from './config.js';

/** One effective value as `gaffer doctor` shows it. */
export interface ShownValue {
  /** The value; a secret is replaced by words (`set (from env GAFFER_MODEL_KEY)`), never shown. */
  value: unknown;
  source: ConfigSource;
}

/** The effective config with each value's source, secrets redacted (spec 07: never echoed). */
export interface ShownConfig {
  /** The config file read, when any. */
  file: string | null;
  values: Record<string, ShownValue>;
}

/**
 * What keeps runner `key` off, naming the setting and where it was set (the file, the environment, or
 * the default), or null when it is enabled or no setting of that name exists.
 */
export function runnerDisabledBy(loaded: LoadedConfig, key: string): string | null {
  const runner = (loaded.config.runners as Partial<Record<string, RunnerConfig>>)[key];
  if (runner === undefined || runner.enabled) return null;
  const setting = `runners.${key}.enabled`;
  switch (loaded.sources[setting] ?? 'default') {
    case 'env':
      return `GAFFER_ENABLED_RUNNERS, which does not name ${key}`;
    case 'file':
      return `${setting}: false in ${loaded.file ?? 'the config file'}`;
    case 'default':
      return `${setting}, false by default — set it true, or GAFFER_ENABLED_RUNNERS=${key}`;
  }
}

/** The effective config as doctor prints it: every value with its source, no secret in it. */
export function describeConfig(loaded: LoadedConfig): ShownConfig {
  const { config, sources } = loaded;
  const values: Record<string, ShownValue> = {};
  const show = (key: string, value: unknown) => (values[key] = { value, source: sources[key] ?? 'default' });

  show('workers.max_parallel', config.workers.max_parallel);
  show('spec_lint', config.spec_lint);
  const owners = [...new Set(Object.values(config.tokens))].sort();
  show(
    'tokens',
    owners.length === 0
      ? "none (single user: the data dir's secret, loopback only)"
      : `${Object.keys(config.tokens).length} set (owners: ${owners.join(', ')})`,
  );
  show('retention.jobs', config.retention.jobs);
  show('default_runner', config.default_runner);
  show('sandbox', config.sandbox);
  show('timeouts.worker_s', config.timeouts.worker_s);
  show('timeouts.verify_s', config.timeouts.verify_s);
  show('verification.confirm_full_suite', config.verification.confirm_full_suite);
  show('server.max_body_bytes', config.server.max_body_bytes);
  show('network.shell', config.network.shell ? 'outbound' : 'none');
  show('network.verification', config.network.verification ? 'outbound' : 'none');
  show(
    'network.loopback_ports',
    config.network.loopback_ports.length === 0 ? 'none' : config.network.loopback_ports.join(', '),
  );
  show('limits.processes', config.limits.processes);
  show('limits.memory_mb', config.limits.memory_mb);
  show('limits.cpu_weight', config.limits.cpu_weight);
  show('env.pass', config.env.pass.length === 0 ? 'none' : config.env.pass.join(', '));
  show('protected_paths', config.protected_paths.length === 0 ? 'none' : config.protected_paths.join(', '));
  for (const [name, e] of Object.entries(config.models)) {
    show(`models.${name}.url`, redactUrl(e.url));
    show(`models.${name}.api`, e.api);
    show(`models.${name}.model`, e.model);
    show(
      `models.${name}.key`,
      e.key ? `set (from ${e.keyFrom ?? 'config'})` : e.keyFrom ? `not set (${e.keyFrom} is empty)` : 'not set',
    );
  }
  for (const key of CONFIG_RUNNER_KEYS) {
    const r = config.runners[key];
    show(`runners.${key}.enabled`, r.enabled);
    show(`runners.${key}.billing`, r.billing);
    show(`runners.${key}.home`, r.home);
  }
  return { file: loaded.file, values };
}
