import type { CliRunnerOptions } from './cli-runner.js';
import { CLI_PROFILES } from './profiles.js';

/** The agent CLI runners' options from the effective config (`runners.<key>.enabled/billing/home`, `sandbox`). */
export function cliRunnerOptions(config: { runners: object; sandbox: CliRunnerOptions['sandbox'] }): Record<string, CliRunnerOptions> {
  const out: Record<string, CliRunnerOptions> = {};
  for (const key of CLI_PROFILES.keys()) {
    const entry = (config.runners as Record<string, { enabled: boolean; billing: CliRunnerOptions['billing']; home: string | null } | undefined>)[key];
    out[key] = { enabled: entry?.enabled ?? false, billing: entry?.billing ?? 'subscription', home: entry?.home ?? null, sandbox: config.sandbox };
  }
  return out;
}
