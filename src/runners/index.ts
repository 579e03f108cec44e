import { BuiltinRunner, type BuiltinRunnerOptions } from './builtin/builtin-runner.js';
import { CliRunner, type CliRunnerOptions } from './cli/cli-runner.js';
import { CLI_PROFILES } from './cli/profiles.js';
import type { Runner } from './contract.js';
import type { SandboxPolicy } from '../platform/sandbox/bwrap.js';
import {
  agentCliNetwork,
  builtinCommandNetwork,
  shellNetwork,
  type NetworkSetup,
} from '../platform/sandbox/network.js';
import { createSandbox, type Sandbox } from '../platform/sandbox/sandbox.js';
import { ShellRunner } from './shell/shell-runner.js';
import type { LocalSwitch } from './report.js';

/** How the runners of one engine are set up (from the config). */
export interface RunnerSetup {
  /**
   * The engine's sandbox (`createSandbox(config.sandbox)`, made once at the composition root and
   * shared with the verification), or a policy to make one from; default `auto`.
   */
  sandbox?: Sandbox | SandboxPolicy;
  /** Config `network` (sandbox/network-config.ts): default shell workers and builtin commands `none`, agent CLIs `outbound`, nothing forwarded. */
  network?: NetworkSetup;
  /** Config `runners.shell.enabled` (default on). */
  shell?: LocalSwitch;
  /** The builtin agent's endpoint and limits (and `runners.builtin.enabled`); default: `GAFFER_MODEL_*` from the environment at each run. */
  builtin?: BuiltinRunnerOptions;
  /** Agent CLIs by key (`cliRunnerOptions(config)`); absent = disabled (they refuse every run). */
  cli?: Record<string, CliRunnerOptions>;
}

/** The runners of this build, set up for `setup`: every one wraps its commands in the same sandbox. */
export function createRunners(setup: RunnerSetup = {}): Map<string, Runner> {
  const sandbox = typeof setup.sandbox === 'object' ? setup.sandbox : createSandbox(setup.sandbox ?? 'auto');
  const network = setup.network ?? {};
  return new Map<string, Runner>([
    ['shell', new ShellRunner({ sandbox, network: shellNetwork(network), ...setup.shell })],
    ['builtin', new BuiltinRunner({ sandbox, network: builtinCommandNetwork(network), ...setup.builtin })],
    ...[...CLI_PROFILES.values()].map((p): [string, Runner] => [
      p.key,
      new CliRunner(p, { sandbox, network: agentCliNetwork(network), ...setup.cli?.[p.key] }),
    ]),
  ]);
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
