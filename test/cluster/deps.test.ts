import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call } from '../reliability/helpers.js';
import { HAS_REDIS, startCoordinator, startNode, startRedis, waitFor } from './harness.js';

/**
 * A real npm project whose test script needs a devDependency: `tiny-check`, a package of the
 * test's own packed into the repository (`vendor/`, a `file:` tarball), installed offline
 * (`.npmrc`: offline, a cache of the test's own). The coordinator's workspace has it installed in
 * its (ignored) `node_modules`, as a developer's checkout does.
 */
function npmProject(): string {
  const pkg = tempDir('gaffer-tiny-check-');
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({ name: 'tiny-check', version: '1.0.0', bin: { 'tiny-check': 'bin.js' } }),
  );
  writeFileSync(
    join(pkg, 'bin.js'),
    "#!/usr/bin/env node\nrequire(require('node:path').resolve(process.argv[2]));\nconsole.log('tiny-check: all passed');\n",
    { mode: 0o755 },
  );
  const ws = makeWorkspace(
    {
      'package.json': JSON.stringify({
        name: 'proj',
        version: '1.0.0',
        private: true,
        scripts: { test: 'tiny-check test.js' },
        devDependencies: { 'tiny-check': 'file:vendor/tiny-check-1.0.0.tgz' },
      }),
      'math.js': 'exports.add = (a, b) => a + b;\n',
      'test.js': "if (require('./math.js').add(1, 2) !== 3) throw new Error('add is wrong');\n",
      '.gitignore': 'node_modules/\n',
      '.npmrc': `offline=true\naudit=false\nfund=false\nupdate-notifier=false\ncache=${tempDir('gaffer-npm-cache-')}\n`,
    },
    { git: true },
  );
  mkdirSync(join(ws, 'vendor'));
  execFileSync('npm', ['pack', '--silent', '--pack-destination', join(ws, 'vendor')], { cwd: pkg, stdio: 'ignore' });
  execFileSync('npm', ['install', '--silent'], { cwd: ws, stdio: 'ignore' });
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ws, stdio: 'ignore' });
  git('add', '-A');
  git('commit', '-qm', 'the project, its lockfile and its vendored devDependency');
  expect(existsSync(join(ws, 'node_modules', '.bin', 'tiny-check'))).toBe(true);
  return ws;
}

/** issue "a cluster an operator can trust", point 5: nodes can run the project's tests. */
describe.skipIf(!HAS_REDIS)('dependencies on a node (needs redis-server and npm)', () => {
  it('a worker that runs the project’s tests on a node finds its devDependencies (installed from the lockfile once, cached): the job is proved as on one machine', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const node = await startNode(redis.url, 'deps', { slots: 1 });
    const ids: string[] = [];
    for (const i of [1, 2]) {
      const ws = npmProject();
      const res = await call(server.url, 'POST', '/api/jobs', {
        workspace: ws,
        runner: 'shell',
        verify: 'npm test',
        tasks: [
          {
            name: 'test',
            instruction: 'run the tests, then write the result',
            command: `npm test && echo 'passed ${i}' > out.txt`,
          },
        ],
      });
      // a 500 here once in a loaded CI run (never since, alone or in the suite): the coordinator's words say why
      expect(res.status, `${JSON.stringify(res.json)}\n${server.stderr()}`).toBe(202);
      ids.push(res.json.id as string);
    }
    for (const id of ids) {
      const answer = (await waitFor(server, id, 'done', 120)).state;
      expect(answer.status, JSON.stringify(answer.result.workers) + node.stderr()).toBe('done');
      expect(answer.result.proof.verdict).toBe('proved');
      // the node's node_modules is not the work: only the worker's file came back
      expect(answer.result.changes.added).toEqual(['out.txt']);
    }
    // one install for the two jobs of one lockfile; the second took the cached one
    expect(node.stderr().match(/installing node_modules: npm ci/g)).toHaveLength(1);
    expect(node.stderr()).toContain('node_modules from the node’s cache, hard-linked into the worktree');
    expect(readdirSync(join(node.workDir, 'deps'))).toHaveLength(1);
  }, 150_000);
});
