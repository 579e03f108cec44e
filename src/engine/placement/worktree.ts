import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { buildWorkerEnv } from '../../platform/process/env.js';
import { spawnCommand } from '../../platform/spawner/spawner.js';
import { runGitOk, splitNul } from '../../evidence/git.js';
import {
  addWorktree,
  checkOutWorktree,
  commitWorktree,
  inTurns,
  removeTaskWorktreeGit,
  serialized,
  type BaseCommit,
  type RepoFacts,
  type WorktreeGit,
} from '../../evidence/worktree-git.js';
import type { Place, Placement, PlacementRequest } from './placement.js';
import { readTextOrNull } from '../../evidence/read-text.js';

/** Worktree settings (config `worktrees`, spec 06; only the data dir's config sets them: a setup command grants power). */
export interface WorktreeSettings {
  /** Where worktrees are made; null: `<data dir>/worktrees`. */
  dir: string | null;
  /** Patterns (gitignore syntax) of untracked files copied into every worktree, besides the repository's `.worktreeinclude`. */
  include: string[];
  /** A command run in each new worktree before its worker, by workspace path (`*`: any workspace). */
  setup: Record<string, string>;
  /** The command that installs dependencies when they cannot be linked (a lockfile differs), by workspace path (`*`: any). */
  install: Record<string, string>;
  /** `link` (a symlink to the workspace's folder) or `copy` (`cp --reflink=auto`: copy-on-write where the filesystem can). */
  deps: 'link' | 'copy';
  /** Set `PORT` besides `GAFFER_PORT`. */
  setPort: boolean;
  /** Verification and gate commands that may run in parallel worktrees (`fanout.parallel_safe_gates`). */
  parallelSafeGates: string[];
  /** Tasks carried out at once in a fan-out; null: the worker cap. */
  maxConcurrency: number | null;
  /** Days a kept worktree or an unmerged branch is kept by `gaffer worktrees prune`. */
  keepDays: number;
  /** Disk the worktrees may use before prune removes the oldest expired first, GB. */
  maxGb: number | null;
}

/** Where a data dir's worktrees live: `worktrees.dir`, else `<data dir>/worktrees`. */
export function worktreeRoot(services: { dataDir: string; worktrees: Pick<WorktreeSettings, 'dir'> }): string {
  return services.worktrees.dir ?? path.join(services.dataDir, 'worktrees');
}

export const DEFAULT_WORKTREE_SETTINGS: WorktreeSettings = {
  dir: null,
  include: [],
  setup: {},
  install: {},
  deps: 'link',
  setPort: true,
  parallelSafeGates: [],
  maxConcurrency: null,
  keepDays: 7,
  maxGb: null,
};

/** The dependency folders linked (or copied) into a worktree, and the lockfiles that say whether they still fit. */
export const DEPENDENCY_DIRS: readonly { dir: string; lockfiles: readonly string[] }[] = [
  {
    dir: 'node_modules',
    lockfiles: ['package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml', 'bun.lockb', 'bun.lock'],
  },
  { dir: '.venv', lockfiles: ['uv.lock', 'poetry.lock', 'Pipfile.lock', 'requirements.txt', 'pdm.lock'] },
];

/** How long a setup or install command may run, ms. */
const SETUP_TIMEOUT_MS = 15 * 60_000;
/** Bytes of a failed setup's output kept in its reason. */
const SETUP_TAIL = 800;

/** One task's worktree, as made. */
export interface TaskWorktree extends Place {
  task: string;
  branch: string;
  /** The commit it was made from (the job's base). */
  base: string;
  /** The worktree's top folder. */
  dir: string;
  /** Its folder and administrative folder as made (gaffer's calls never follow its `.git` file). */
  git: WorktreeGit;
  /** Its index as checked out (the base, with stat data), where its commit starts; null when not kept. */
  baseIndex: string | null;
  /** What gaffer put there that is not the work (copied includes, linked dependencies): never committed, removed before the worktree. */
  placed: string[];
  /** `GAFFER_PORT` (and `PORT`) for its worker. */
  port: number;
  /** Words for the result: how dependencies got there, what was copied, the setup command's outcome. */
  notes: { deps: string[]; included: number; setup: string | null };
}

/**
 * Checkouts of one repository at once: one per core. A checkout is one process writing every file
 * of the tree, bound by the CPU (the kernel's file creation mostly): one per core keeps the cores
 * busy without queueing behind each other (2 on a 2-core machine: a fan-out of 8 tasks of 500 files
 * 25% faster than one at a time, for the same CPU); more than the cores only add CPU (4 at once on
 * 2 cores took twice the CPU of one after another, for the same wall time).
 */
export function checkoutsAtOnce(): number {
  return Math.max(1, os.availableParallelism());
}

/** Someone told of each step (a phase message). */
type Say = (message: string) => void;

const portsHanded = new Set<number>();

/**
 * Makes a task's worktree (spec 06 "Worktree isolation"): branch `gaffer/<job>/<task>` at the base,
 * the untracked files `.worktreeinclude` and config name copied in, dependencies linked or installed,
 * a port of its own, then the configured setup command. A failed setup is the place's `failure`:
 * the task's attempt ends with it (its output tail in the reason) before any worker starts.
 */
export async function makeTaskWorktree(opts: {
  repo: RepoFacts;
  base: BaseCommit;
  workspace: string;
  root: string;
  jobId: string;
  task: string;
  settings: WorktreeSettings;
  logDir: string;
  say: Say;
  /** Its folder when not `<root>/<job>/<task>` (a follow-up where the followed task's session ran). */
  dir?: string | undefined;
}): Promise<TaskWorktree> {
  const { repo, settings, say } = opts;
  const branch = `gaffer/${opts.jobId}/${opts.task}`;
  const dir = opts.dir ?? path.join(opts.root, opts.jobId, opts.task);
  mkdirSync(path.dirname(dir), { recursive: true });
  // only the repository-wide part takes the repository's turn; the checkout fills this worktree alone, one per core at once
  const git = await serialized(repo, () => addWorktree(repo, dir, branch, opts.base.commit));
  const baseIndex = path.join(opts.logDir, `${opts.task}.base-index`);
  mkdirSync(opts.logDir, { recursive: true });
  await inTurns(repo, 'checkout', checkoutsAtOnce(), () => checkOutWorktree(git, baseIndex));
  const workspace = repo.prefix ? path.join(dir, repo.prefix) : dir;
  // as git wrote it, before any worker ran
  const gitLink = readFileSync(path.join(dir, '.git'), 'utf8');
  const placed: string[] = [];
  const included = await copyIncludes(repo, dir, settings.include, placed);
  const port = await freePort();
  const env: Record<string, string> = {
    GAFFER_PORT: String(port),
    ...(settings.setPort ? { PORT: String(port) } : {}),
  };
  const deps: string[] = [];
  let failure: string | null = null;
  for (const d of DEPENDENCY_DIRS) {
    const from = path.join(opts.workspace, d.dir);
    if (!existsSync(from) || existsSync(path.join(workspace, d.dir))) continue;
    const differs = d.lockfiles.filter(
      (l) => readTextOrNull(path.join(opts.workspace, l)) !== readTextOrNull(path.join(workspace, l)),
    );
    if (differs.length === 0) {
      if (settings.deps === 'copy') await copyOnWrite(from, path.join(workspace, d.dir));
      else symlinkSync(from, path.join(workspace, d.dir));
      placed.push(path.join(repo.prefix, d.dir));
      deps.push(
        `${d.dir} ${settings.deps === 'copy' ? 'copied (copy-on-write where the filesystem can)' : 'linked'} from the workspace`,
      );
      continue;
    }
    const install = commandFor(settings.install, opts.workspace);
    if (install === null) {
      deps.push(
        `${d.dir} not linked: ${differs.join(', ')} differs from the workspace's and no worktrees.install is configured`,
      );
      continue;
    }
    say(`${opts.task}: installing dependencies: ${install}`);
    const why = await runConfigured(install, workspace, env, path.join(opts.logDir, `${opts.task}.install.log`));
    deps.push(
      why === null
        ? `${d.dir} installed (${install}): ${differs.join(', ')} differs`
        : `${d.dir} install failed: ${why}`,
    );
    if (why !== null) failure = `dependency install failed: ${why}`;
  }
  const setupCommand = commandFor(settings.setup, opts.workspace);
  let setup: string | null = null;
  if (setupCommand !== null && failure === null) {
    say(`${opts.task}: setup: ${setupCommand}`);
    const why = await runConfigured(setupCommand, workspace, env, path.join(opts.logDir, `${opts.task}.setup.log`));
    setup = why === null ? `ran: ${setupCommand}` : `failed: ${why}`;
    if (why !== null) failure = `setup command failed: ${why}`;
    say(`${opts.task}: setup ${why === null ? 'done' : `failed: ${why}`}`);
  }
  return {
    task: opts.task,
    branch,
    base: opts.base.commit,
    dir,
    git,
    baseIndex,
    workspace,
    placed,
    port,
    env,
    notes: { deps, included, setup },
    ...(failure !== null ? { failure } : {}),
    isolated: true,
    repair: () => restoreGitLink(dir, workspace, gitLink),
    // a worktree is its task's alone: every runner may work in it at once with the others' (spec 04)
    turn: () => Promise.resolve(() => undefined),
    release: () => undefined,
  };
}

/** What every worktree of one job is made from: the repository, the job's base commit, where worktrees go, how they are set up. */
export interface WorktreeSite {
  repo: RepoFacts;
  base: BaseCommit;
  /** The user's workspace (dependencies are linked from it). */
  workspace: string;
  root: string;
  settings: WorktreeSettings;
  /** The job's folder: setup and install logs, the checked-out index's copy. */
  logDir: string;
  /** A task's folder when not `<root>/<job>/<task>`, by task name (a follow-up resumed where its task ran). */
  folders?: ReadonlyMap<string, string>;
}

/**
 * The second `Placement` (spec 06 "Worktree isolation"): a place per task — its own worktree and
 * branch off the job's base commit, set up (includes, dependencies, port, setup command) before
 * its first attempt. One per worktree job: it holds the job's base.
 */
export class WorktreePlacement implements Placement {
  readonly kind = 'worktree';
  readonly #site: WorktreeSite;

  constructor(site: WorktreeSite) {
    this.#site = site;
  }

  /** The worktree of `job.task` (`+merged` for the merged tree); null when the job was cancelled first. Each step is told through `onWait`. */
  async acquire(job: PlacementRequest): Promise<TaskWorktree | null> {
    if (job.task === undefined) throw new Error('a worktree placement places one task at a time: name it');
    if (job.signal.aborted) return null;
    return makeTaskWorktree({
      ...this.#site,
      jobId: job.jobId,
      task: job.task,
      dir: this.#site.folders?.get(job.task),
      say: (message) => job.onWait(message),
    });
  }
}

/**
 * Commits the task's changed paths onto its branch, then — when it passed — removes what gaffer
 * placed and the worktree without `--force` (a refusal keeps it, with git's reason). Returns the
 * branch tip (null: nothing to commit) and where the worktree stands. `committed` is told once the
 * branch holds the work: the removal, which nobody waits for, lets the repository's other calls
 * (a next task's worktree) go first.
 */
export async function finishTaskWorktree(
  repo: RepoFacts,
  wt: TaskWorktree,
  changed: readonly string[],
  passed: boolean,
  jobId: string,
  committed: () => void = () => undefined,
): Promise<{ commit: string | null; removed: boolean; why: string | null }> {
  const paths = changed.map((p) => (repo.prefix ? path.posix.join(repo.prefix, p) : p));
  // not queued behind the repository's other calls: it works in this worktree alone (its own index,
  // HEAD and branch; objects and a single ref are written atomically by git)
  const commit = await commitWorktree(
    wt.git,
    wt.branch,
    { commit: wt.base, index: wt.baseIndex },
    `gaffer: job ${jobId}, task ${wt.task}`,
    paths,
  );
  if (wt.baseIndex !== null) rmSync(wt.baseIndex, { force: true });
  committed();
  if (!passed) return { commit, removed: false, why: 'kept for the autopsy: the task did not pass' };
  const refused = await removeTaskWorktree(repo, wt, { later: true });
  return { commit, removed: refused === null, why: refused };
}

/**
 * Removes what gaffer placed in a worktree, then the worktree without `--force`: null when gone, else
 * git's refusal. `later`: the repository's calls others wait for go first.
 */
export async function removeTaskWorktree(
  repo: RepoFacts,
  wt: TaskWorktree,
  opts: { later?: boolean } = {},
): Promise<string | null> {
  for (const p of wt.placed) rmSync(path.join(wt.dir, p), { recursive: true, force: true });
  // only the repository-wide part (its administrative folder, or git's own removal) takes the repository's turn
  const refused = await removeTaskWorktreeGit(repo, wt.git, (fn) => serialized(repo, fn, '', opts));
  return refused === null ? null : `git refused to remove it (not forced): ${refused}`;
}

/** Writes a worktree's `.git` file back when it is not as git wrote it; names it (relative to the workspace) when it had to. */
function restoreGitLink(dir: string, workspace: string, content: string): string[] {
  const file = path.join(dir, '.git');
  if (readTextOrNull(file) === content && lstatSync(file).isFile()) return [];
  rmSync(file, { recursive: true, force: true });
  writeFileSync(file, content);
  return [path.relative(workspace, file)];
}

/** Whether a setup or install command runs in each new worktree of `workspace`: worktrees of one base may then differ before any worker. */
export function preparesEachWorktree(settings: WorktreeSettings, workspace: string): boolean {
  return commandFor(settings.setup, workspace) !== null || commandFor(settings.install, workspace) !== null;
}

/** The configured command for a workspace: its own entry, else `*`'s. */
function commandFor(table: Record<string, string>, workspace: string): string | null {
  return table[workspace] ?? table['*'] ?? null;
}

/**
 * Copies the untracked files the repository's `.worktreeinclude` and config `worktrees.include`
 * match (gitignore syntax; tracked files are never copied: the worktree has them) into the worktree.
 */
async function copyIncludes(repo: RepoFacts, dir: string, extra: readonly string[], placed: string[]): Promise<number> {
  const own = readTextOrNull(path.join(repo.top, '.worktreeinclude'));
  const patterns = [own ?? '', ...extra].join('\n').trim();
  if (patterns === '') return 0;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gaffer-include-'));
  try {
    writeFileSync(path.join(tmp, 'patterns'), `${patterns}\n`);
    const listed = await runGitOk(
      [
        '-c',
        'core.fsmonitor=false',
        'ls-files',
        '-z',
        '--others',
        '--ignored',
        `--exclude-from=${path.join(tmp, 'patterns')}`,
      ],
      {
        cwd: repo.top,
        timeoutMs: 120_000,
      },
    );
    let copied = 0;
    for (const rel of splitNul(listed)) {
      const target = path.join(dir, rel);
      if (existsSync(target)) continue;
      const stat = lstatSync(path.join(repo.top, rel), { throwIfNoEntry: false });
      if (!stat || !(stat.isFile() || stat.isSymbolicLink())) continue;
      mkdirSync(path.dirname(target), { recursive: true });
      cpSync(path.join(repo.top, rel), target, { preserveTimestamps: true, verbatimSymlinks: true });
      placed.push(rel);
      copied++;
    }
    return copied;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** A configured command (setup, install) in the worktree: null when it succeeded, else why, with its output's tail. */
export async function runConfigured(
  command: string,
  cwd: string,
  env: Record<string, string>,
  logFile: string,
): Promise<string | null> {
  const result = await spawnCommand({
    cmd: 'sh',
    args: ['-c', command],
    cwd,
    env: { ...buildWorkerEnv(process.env), ...env },
    timeoutMs: SETUP_TIMEOUT_MS,
    input: '',
  });
  const output = `${result.stdout.toString('utf8')}${result.stderr}`;
  mkdirSync(path.dirname(logFile), { recursive: true });
  writeFileSync(logFile, output);
  if (result.spawnError !== undefined) return result.spawnError;
  if (result.timedOut) return `timed out after ${SETUP_TIMEOUT_MS / 1000} s`;
  if (result.exitCode === 0) return null;
  const tail = output.trim().slice(-SETUP_TAIL);
  return `exit ${result.exitCode ?? 'signal'}${tail ? `: ${tail}` : ''}`;
}

/** `cp -a --reflink=auto`: a copy that shares blocks where the filesystem can. */
export async function copyOnWrite(from: string, to: string): Promise<void> {
  const result = await spawnCommand({
    cmd: 'cp',
    args: ['-a', '--reflink=auto', from, to],
    cwd: os.tmpdir(),
    env: process.env,
    timeoutMs: SETUP_TIMEOUT_MS,
    input: '',
  });
  if (result.exitCode !== 0)
    throw new Error(
      `cp -a --reflink=auto ${from} ${to}: ${result.stderr.trim() || result.spawnError || `exit ${result.exitCode}`}`,
    );
}

/** A loopback port free now and not handed to another worktree by this process. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    if (port > 0 && !portsHanded.has(port)) {
      portsHanded.add(port);
      return port;
    }
  }
}
