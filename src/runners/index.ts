import { BuiltinRunner } from './builtin/builtin-runner.js';
import type { Runner } from './contract.js';
import { ShellRunner } from './shell/shell-runner.js';

const RUNNERS: ReadonlyMap<string, Runner> = new Map<string, Runner>([
  ['shell', new ShellRunner()],
  ['builtin', new BuiltinRunner()],
]);

/** The runner registered under `key`; undefined when there is none. */
export function getRunner(key: string): Runner | undefined {
  return RUNNERS.get(key);
}

/** Keys of every registered runner. */
export function listRunnerKeys(): string[] {
  return [...RUNNERS.keys()];
}
