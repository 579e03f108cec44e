import type { CliRunnerOptions } from './cli-runner.js';
import { CLI_PROFILES } from './profiles.js';
import { cliEndpoint, type ConfiguredEndpoint } from './endpoint.js';

/** A runner's config entry as the CLI runners read it. */
interface ConfiguredRunner {
  enabled: boolean;
  billing: CliRunnerOptions['billing'];
  home: string | null;
  endpoint?: string | null;
}

/**
 * The agent CLI runners' options from the effective config (`runners.<key>.enabled/billing/home/endpoint`;
 * the sandbox is the engine's, given by createRunners). `endpoint` names a `models.<name>` the CLI is
 * pointed at through its own settings (profiles.ts) instead of its vendor's API; an endpoint whose
 * wire API the CLI does not speak is refused, naming both. `disabledBy` says what keeps a disabled
 * one off (the config knows which setting and where it was set).
 */
export function cliRunnerOptions(
  config: { runners: object; models?: Record<string, ConfiguredEndpoint> },
  disabledBy?: (key: string) => string | null,
): Record<string, CliRunnerOptions> {
  const out: Record<string, CliRunnerOptions> = {};
  for (const [key, profile] of CLI_PROFILES) {
    const entry = (config.runners as Record<string, ConfiguredRunner | undefined>)[key];
    const name = entry?.endpoint ?? null;
    const enabled = entry?.enabled ?? false;
    const off = enabled ? null : (disabledBy?.(key) ?? null);
    out[key] = {
      enabled,
      ...(off !== null ? { disabledBy: off } : {}),
      billing: entry?.billing ?? 'subscription',
      home: entry?.home ?? null,
      ...(name !== null
        ? { endpoint: cliEndpoint(profile, name, config.models?.[name], `runners.${key}.endpoint`) }
        : {}),
      // a roster entry may point this CLI at another one (issue 14): each is resolved when a task routes there
      endpoints: config.models ?? {},
    };
  }
  return out;
}
