import { join, posix } from 'node:path';
import { shellQuote } from '../select.js';
import { selectNodeTest } from './node-test.js';
import { parseScript } from './script.js';
import { all, isPythonEnv, listFiles, TOO_BIG } from './shared.js';
import type { RelatedResult } from './types.js';
import { selectVitestOrJest } from './vitest-jest.js';
import { readWorkspaceText } from '../../platform/files/bounded-read.js';

// A node project's tests are what package.json's scripts.test runs: this reads that script and hands it to
// the framework it names (vitest, jest, node --test); mocha and anything else run everything, with why.

const EXEC_PREFIX: Record<string, string> = { npm: 'npx', pnpm: 'pnpm exec', yarn: 'yarn', bun: 'bunx' };

/** The related run for a node project, chosen by the framework its scripts.test runs. */
export async function selectNode(workspace: string, command: string, changed: string[]): Promise<RelatedResult> {
  let pkg: {
    scripts?: Record<string, unknown>;
    devDependencies?: Record<string, unknown>;
    dependencies?: Record<string, unknown>;
  };
  try {
    pkg = JSON.parse(readWorkspaceText(workspace, 'package.json') ?? '') as typeof pkg;
  } catch {
    return all('package.json cannot be read');
  }
  const test = pkg.scripts?.test;
  if (typeof test !== 'string') return all('package.json has no scripts.test to scope');
  const pretest = pkg.scripts?.pretest;
  if (typeof pretest === 'string' && pretest.trim())
    return all(`scripts.pretest (\`${pretest}\`) runs before the tests; related scope would skip it`);
  const script = parseScript(test);
  if (script === null)
    return all(`scripts.test (\`${test}\`) is not one plain command; related scope cannot keep what else it does`);
  const binary = posix.basename(script.words[0] ?? '');
  const args = script.words.slice(1);
  const exec = EXEC_PREFIX[command.trim().split(/\s+/)[0] ?? ''] ?? 'npx';
  const env = script.env.map(([name, value]) => `${name}=${shellQuote(value)}`);
  const tree = await listFiles(workspace, isPythonEnv);
  if (tree === null) return all(TOO_BIG);

  if (binary === 'vitest' || binary === 'jest')
    return selectVitestOrJest(workspace, tree, changed, { env, exec, binary, args });
  if (binary === 'mocha') return all('mocha has no related-tests mode gaffer drives; related scope runs everything');
  if ((binary === 'node' || binary === 'tsx') && args.includes('--test')) {
    return selectNodeTest(workspace, tree, changed, { env, binary: binary === 'tsx' ? `${exec} tsx` : 'node', args });
  }
  const deps = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).filter((d) =>
    ['vitest', 'jest', 'mocha'].includes(d),
  );
  const hint =
    deps.length > 0 ? ` (devDependencies name ${deps.join(', ')}, but the script does not run it directly)` : '';
  return all(
    `scripts.test (\`${test}\`) runs no framework gaffer selects related tests for (vitest, jest, node --test)${hint}`,
  );
}
