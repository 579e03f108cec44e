import { BuiltinRunner, type BuiltinRunnerOptions } from './builtin/builtin-runner.js';
import type { WrapBuiltinCommand } from './builtin/tool-context.js';
import { CliRunner, type CliRunnerOptions } from './cli/cli-runner.js';
import { CLI_PROFILES } from './cli/profiles.js';
import type { Runner } from './contract.js';
import { wrapWithSandbox, type SandboxPolicy } from './sandbox/bwrap.js';
import { probeSandbox } from './sandbox/probe.js';
import { ShellRunner, type WrapCommand } from './shell/shell-runner.js';

/** How the runners of one engine are set up (from the config). */
export interface RunnerSetup {
  /** Config `sandbox`, default `auto`. */
  sandbox?: SandboxPolicy;
  /** The builtin agent's endpoint and limits; default: `GAFFER_MODEL_*` from the environment at each run. */
  builtin?: BuiltinRunnerOptions;
  /** Agent CLIs by key (`cliRunnerOptions(config)`); absent = disabled (they refuse every run). */
  cli?: Record<string, CliRunnerOptions>;
}

/** The runners of this build, set up for `setup`. */
export function createRunners(setup: RunnerSetup = {}): Map<string, Runner> {
  const wrapCommand = sandboxWrapper(setup.sandbox ?? 'auto');
  return new Map<string, Runner>([
    ['shell', new ShellRunner(wrapCommand ? { wrapCommand } : {})],
    ['builtin', new BuiltinRunner({ ...(wrapCommand ? { wrapCommand: builtinCommandWrapper(wrapCommand) } : {}), ...setup.builtin })],
    ...[...CLI_PROFILES.values()].map((p): [string, Runner] => [p.key, new CliRunner(p, { sandbox: setup.sandbox ?? 'auto', ...setup.cli?.[p.key] })]),
  ]);
}

/** The builtin agent's `run_command` under the same policy; a refusal becomes a command that fails saying why. */
function builtinCommandWrapper(wrap: WrapCommand): WrapBuiltinCommand {
  return (run) => {
    const wrapped = wrap(run);
    if (wrapped.refused === undefined) return wrapped;
    return { argv: ['/bin/sh', '-c', 'printf "%s\\n" "$1" >&2; exit 126', 'sh', `refused: ${wrapped.refused}`], sandboxed: false };
  };
}

/**
 * The shell runner's sandbox seam for a policy (spec 04): `auto` wraps in bwrap where it works
 * and otherwise runs unsandboxed (the row says `sandboxed: false`); `required` refuses the worker
 * without it; `off` installs no wrapper.
 */
export function sandboxWrapper(policy: SandboxPolicy): WrapCommand | undefined {
  if (policy === 'off') return undefined;
  return ({ shellCommand, workspace, instructionFile }) => {
    const wrapped = wrapWithSandbox({ shellCommand, workspace, readable: instructionFile === undefined ? [] : [instructionFile] });
    if (wrapped !== null) return wrapped;
    if (policy === 'required') {
      return { argv: [], sandboxed: false, refused: `the sandbox is required (config sandbox: required) but does not work here: ${probeSandbox().reason}` };
    }
    return { argv: ['/bin/sh', '-c', shellCommand], sandboxed: false };
  };
}

const RUNNERS: ReadonlyMap<string, Runner> = createRunners();

/** The runner registered under `key` (default setup: sandbox `auto`); undefined when there is none. */
export function getRunner(key: string): Runner | undefined {
  return RUNNERS.get(key);
}

/** Keys of every registered runner. */
export function listRunnerKeys(): string[] {
  return [...RUNNERS.keys()];
}
