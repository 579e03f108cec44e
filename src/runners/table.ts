import type { Runner } from './contract.js';

/** A row of `gaffer runners` / `GET /api/runners` / `agent_runners`. */
export interface RunnerRow {
  key: string;
  label: string;
  installed: boolean;
  enabled: boolean;
  version: string | null;
  resume: boolean;
  sandbox: boolean;
  install_hint: string | null;
}

const LABELS: Record<string, string> = { shell: 'shell command (sh -c in the workspace)' };

/** The runner table of this build. */
export function describeRunners(runners: ReadonlyMap<string, Runner>): RunnerRow[] {
  return [...runners.values()].map((r) => ({
    key: r.key,
    label: LABELS[r.key] ?? r.key,
    installed: true,
    enabled: true,
    version: r.key === 'shell' ? process.version : null,
    resume: r.canResume,
    // no sandbox is wired yet: every row says so
    sandbox: false,
    install_hint: null,
  }));
}
