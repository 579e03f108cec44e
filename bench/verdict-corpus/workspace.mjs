// One corpus workspace: a fresh copy of a cached project with its harness set up, the bug (and
// the scenario's own checkpoint edits) in place, committed as a git repository, the way a user's
// checkout with a bug looks. The test dependencies are a real node_modules folder inside the
// workspace, as a user's are (vite writes its bundled config into node_modules/.vite-temp, and the
// sandbox makes a folder outside the workspace read-only), hard-linked from the cache: no copy of
// the bytes, and what the tests create there lands in the workspace's own folders.
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { applyEdits } from './edits.mjs';

const GIT_ID = ['-c', 'user.name=corpus', '-c', 'user.email=corpus@example.invalid', '-c', 'commit.gpgsign=false'];

/** The command the project's own harness runs, as a person would type it. */
export function testCommand(project) {
  if (project.framework === 'pytest') return ['python3', '-m', 'pytest', '-q'];
  if (project.framework === 'go test') return ['go', 'test', '-count=1', './...'];
  return ['npm', 'test', '--silent'];
}

/** Builds the workspace of `scenario` on `project` in `dir` (which must not exist); returns its real path. */
export function buildWorkspace(project, scenario, prepared, dir) {
  mkdirSync(dir, { recursive: true });
  cpSync(prepared.src, dir, { recursive: true });
  if (prepared.deps) linkTree(prepared.deps, join(dir, 'node_modules'));
  const real = realpathSync(dir);
  applyEdits(real, project.setup);
  applyEdits(real, project.bug);
  if (scenario.atCheckpoint) applyEdits(real, scenario.atCheckpoint(project, real));
  appendFileSync(join(real, '.gitignore'), `${existsSync(join(real, '.gitignore')) ? '\n' : ''}node_modules\n`);
  const git = (...args) =>
    execFileSync('git', [...GIT_ID, ...args], { cwd: real, stdio: 'ignore', env: cleanGitEnv() });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '--no-verify', '-m', `${project.label} with a bug`);
  return real;
}

/** A copy of a folder whose files are hard links (`cp -al`), or a real copy across filesystems. */
function linkTree(from, to) {
  const r = spawnSync('cp', ['-al', from, to], { stdio: 'ignore' });
  if (r.status !== 0) cpSync(from, to, { recursive: true, verbatimSymlinks: true });
}

/** The environment without the caller's GIT_* variables (a bench run from a git hook has them). */
function cleanGitEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return env;
}

/** Runs the project's test command in `dir` as gaffer would (CI=true): true when it passed. */
export function runTests(project, dir) {
  const [cmd, ...args] = testCommand(project);
  const r = spawnSync(cmd, args, {
    cwd: dir,
    encoding: 'utf8',
    env: { ...cleanGitEnv(), CI: 'true', TZ: 'UTC', PYTHONHASHSEED: '0' },
    timeout: 300_000,
  });
  return { passed: r.status === 0, status: r.status, tail: `${r.stdout ?? ''}${r.stderr ?? ''}`.slice(-1500) };
}
