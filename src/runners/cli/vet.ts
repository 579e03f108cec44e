import { GafferError } from '../../domain/errors.js';
import { CliRunner } from './cli-runner.js';
import { CLI_PROFILES, getCliProfile } from './profiles.js';

/** Runners that are not agent CLIs and need no vetting here. */
const NOT_CLI: ReadonlySet<string> = new Set(['shell', 'builtin']);

/**
 * Refuses a runner before anything starts (spec 04 "Vetting"): `unknown_runner` for a key that
 * is no runner, `runner_disabled` for an agent CLI not enabled in config (they run third-party
 * binaries) or without a known headless invocation, `runner_not_installed` with the install
 * command. `shell` and `builtin` pass. Throws a GafferError; returns the detected version.
 */
export function vetCliRunner(
  key: string,
  config: { runners: object },
  opts: { binDirs?: readonly string[]; field?: string } = {},
): string | null {
  if (NOT_CLI.has(key)) return null;
  const profile = getCliProfile(key);
  if (profile === undefined) {
    throw new GafferError(
      'unknown_runner',
      `"${key}" is not a runner this build knows (known: shell, builtin, ${[...CLI_PROFILES.keys()].join(', ')})`,
      opts.field,
    );
  }
  const setting = (config.runners as Record<string, { enabled: boolean } | undefined>)[key];
  // the refusals themselves live in CliRunner.vet, the check every dispatch makes
  const runner = new CliRunner(profile, { enabled: setting?.enabled === true, binDirs: [...(opts.binDirs ?? [])] });
  runner.vet({ model: null }, opts.field ?? key);
  return runner.detect().version;
}
