import { CliRunner } from './cli/cli-runner.js';
import { installHint } from './cli/profiles.js';
import type { Runner } from './contract.js';

/** A row of `gaffer runners` / `GET /api/runners` / `agent_runners`. */
export interface RunnerRow {
  key: string;
  label: string;
  installed: boolean;
  enabled: boolean;
  /** What keeps it off (the config key or environment variable, and where it was set); null when enabled. */
  disabled_by: string | null;
  version: string | null;
  resume: boolean;
  sandbox: boolean;
  install_hint: string | null;
  /** Agent CLIs: the profile's licence word. */
  licence?: string;
  /** Agent CLIs: the version gaffer's profile was checked against. */
  pinned_version?: string;
}

const LABELS: Record<string, string> = { shell: 'shell command (sh -c in the workspace)' };

/** The runner table of this build. */
export function describeRunners(runners: ReadonlyMap<string, Runner>): RunnerRow[] {
  return [...runners.values()].map((r) =>
    r instanceof CliRunner
      ? describeCli(r)
      : {
          key: r.key,
          label: LABELS[r.key] ?? r.key,
          installed: true,
          enabled: r.enabled ?? true,
          disabled_by: r.disabledBy ?? null,
          // shell has no version of its own (it runs `sh -c`); builtin is part of gaffer
          version: null,
          resume: r.canResume,
          sandbox: r.sandboxed ?? false,
          install_hint: null,
        },
  );
}

/** An agent CLI's row: detected (cached `which` + version), enabled from config, sandbox when it would be wrapped. */
function describeCli(r: CliRunner): RunnerRow {
  const found = r.detect();
  return {
    key: r.key,
    label: r.profile.label,
    installed: found.installed,
    enabled: r.enabled,
    disabled_by: r.disabledBy,
    version: found.version,
    resume: r.canResume,
    sandbox: r.sandboxed,
    install_hint: found.installed ? null : installHint(r.profile),
    licence: r.profile.licence,
    pinned_version: r.profile.version,
  };
}
