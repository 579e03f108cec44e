import { BuiltinRunner, type BuiltinRunnerOptions } from './builtin/builtin-runner.js';
import type { WrapBuiltinCommand } from './builtin/tool-context.js';
import { CliRunner, type CliRunnerOptions } from './cli/cli-runner.js';
import { CLI_PROFILES } from './cli/profiles.js';
import type { Runner } from './contract.js';
import { wrapWithSandbox, type SandboxPolicy } from '../platform/sandbox/bwrap.js';
import { agentCliNetwork, builtinCommandNetwork, describeHostNetworkRefusal, NO_NETWORK, shellNetwork, type NetworkSetup, type SandboxNetwork } from '../platform/sandbox/network.js';
import { probeSandbox } from '../platform/sandbox/probe.js';
import { ShellRunner, type WrapCommand } from './shell/shell-runner.js';

/** How the runners of one engine are set up (from the config). */
export interface RunnerSetup {
  /** Config `sandbox`, default `auto`. */
  sandbox?: SandboxPolicy;
  /** Config `network` (sandbox/network-config.ts): default shell workers and builtin commands `none`, agent CLIs `outbound`, nothing forwarded. */
  network?: NetworkSetup;
  /** The builtin agent's endpoint and limits; default: `GAFFER_MODEL_*` from the environment at each run. */
  builtin?: BuiltinRunnerOptions;
  /** Agent CLIs by key (`cliRunnerOptions(config)`); absent = disabled (they refuse every run). */
  cli?: Record<string, CliRunnerOptions>;
}

/** The runners of this build, set up for `setup`. */
export function createRunners(setup: RunnerSetup = {}): Map<string, Runner> {
  const policy = setup.sandbox ?? 'auto';
  const network = setup.network ?? {};
  const wrapShell = sandboxWrapper(policy, shellNetwork(network));
  const wrapBuiltin = sandboxWrapper(policy, builtinCommandNetwork(network));
  return new Map<string, Runner>([
    ['shell', new ShellRunner(wrapShell ? { wrapCommand: wrapShell } : {})],
    ['builtin', new BuiltinRunner({ ...(wrapBuiltin ? { wrapCommand: builtinCommandWrapper(wrapBuiltin) } : {}), ...setup.builtin })],
    ...[...CLI_PROFILES.values()].map((p): [string, Runner] => [p.key, new CliRunner(p, { sandbox: policy, network: agentCliNetwork(network), ...setup.cli?.[p.key] })]),
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
 * and otherwise runs unsandboxed (the row says `sandboxed: false`, `network: host`); `required`
 * refuses the worker without it; `off` installs no wrapper. `network` is what each run gets.
 */
export function sandboxWrapper(policy: SandboxPolicy, network: SandboxNetwork = NO_NETWORK): WrapCommand | undefined {
  if (policy === 'off') return undefined;
  return ({ shellCommand, workspace, instructionFile }) => {
    const wrapped = wrapWithSandbox({ shellCommand, workspace, readable: instructionFile === undefined ? [] : [instructionFile], network });
    if (wrapped !== null && wrapped.network === 'host' && policy === 'required') return { argv: [], sandboxed: false, network: 'host', refused: describeHostNetworkRefusal() };
    if (wrapped !== null) return wrapped;
    if (policy === 'required') {
      return { argv: [], sandboxed: false, network: 'host', refused: `the sandbox is required (config sandbox: required) but does not work here: ${probeSandbox().reason}` };
    }
    return { argv: ['/bin/sh', '-c', shellCommand], sandboxed: false, network: 'host' };
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
