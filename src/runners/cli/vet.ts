import type { GafferConfig } from '../../config/config.js';
import { GafferError } from '../../domain/errors.js';
import { detectCli } from './detect.js';
import { CLI_PROFILES, getCliProfile, installHint } from './profiles.js';

/** Runners that are not agent CLIs and need no vetting here. */
const NOT_CLI: ReadonlySet<string> = new Set(['shell', 'builtin']);

/**
 * Refuses a runner before anything starts (spec 04 "Vetting"): `unknown_runner` for a key that
 * is no runner, `runner_disabled` for an agent CLI not enabled in config (they run third-party
 * binaries) or without a known headless invocation, `runner_not_installed` with the install
 * command. `shell` and `builtin` pass. Throws a GafferError; returns the detected version.
 */
export function vetCliRunner(key: string, config: Pick<GafferConfig, 'runners'>, opts: { binDirs?: readonly string[]; field?: string } = {}): string | null {
  if (NOT_CLI.has(key)) return null;
  const profile = getCliProfile(key);
  if (profile === undefined) {
    throw new GafferError('unknown_runner', `"${key}" is not a runner this build knows (known: shell, builtin, ${[...CLI_PROFILES.keys()].join(', ')})`, opts.field);
  }
  const setting = (config.runners as Record<string, { enabled: boolean } | undefined>)[key];
  if (setting?.enabled !== true) {
    throw new GafferError(
      'runner_disabled',
      `${key} is disabled: agent CLIs are off until enabled — set runners.${key}.enabled: true in gaffer.config.json (or GAFFER_ENABLED_RUNNERS=${key})`,
      opts.field,
    );
  }
  if (!profile.invocationKnown) throw new GafferError('runner_disabled', `${key} has no known headless invocation in this build`, opts.field);
  const found = detectCli(profile, { binDirs: opts.binDirs ?? [] });
  if (!found.installed) throw new GafferError('runner_not_installed', `${key} is not installed (${found.reason ?? 'not found'}): ${installHint(profile)}`, opts.field);
  return found.version;
}
