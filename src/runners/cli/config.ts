import type { CliRunnerOptions } from './cli-runner.js';
import { CLI_PROFILES } from './profiles.js';

/** The agent CLI runners' options from the effective config (`runners.<key>.enabled/billing/home`; the sandbox is the engine's, given by createRunners). */
export function cliRunnerOptions(config: { runners: object }): Record<string, CliRunnerOptions> {
  const out: Record<string, CliRunnerOptions> = {};
  for (const key of CLI_PROFILES.keys()) {
    const entry = (config.runners as Record<string, { enabled: boolean; billing: CliRunnerOptions['billing']; home: string | null } | undefined>)[key];
    out[key] = { enabled: entry?.enabled ?? false, billing: entry?.billing ?? 'subscription', home: entry?.home ?? null };
  }
  return out;
}
