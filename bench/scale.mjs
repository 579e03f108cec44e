// The big-repository cases (issue 37): a generated git repository of 250,000 small text files
// (~20 a folder) whose user commits between jobs, gaffer's evidence library against git on the
// same tree. Opt-in: `npm run bench -- --only scale` runs them all (`scale_cold`, `scale_warm`,
// `scale_diff`, `scale_rss`, one by one with `--only scale_warm,...`); the default run leaves them
// out (the cold pair alone is ~10 minutes on a 2-core VM).
//
// The repository is generated once and cached outside the run's temp dir, keyed by its
// parameters (`<tmpdir>/gaffer-bench-cache/scale-…`, or $GAFFER_BENCH_CACHE): reruns skip the
// minute it takes. GAFFER_BENCH_SCALE_COLD_REPS=n runs the cold pair n times after its warm-up. A run leaves it committed (the cases commit what they change), and a run that
// finds it dirty (one that crashed) commits first.
//
// References run in the user's own repository (its index warm: the user just committed) with the
// bench's hermetic git environment; gaffer's side goes through the evidence library's public API
// as the engine calls it (carry-out.ts: the `pre` snapshot, the `post` one `like` it, diffSnapshots).
import { fork } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import {
  doneJob,
  engineMod,
  evidence,
  fanoutPairs,
  JOB_SCRIPT,
  msRow,
  pair,
  pairedRatio,
  ratioRow,
  repeat,
  runnersMod,
  sandboxOff,
} from './cases.mjs';
import { fileBody, git, gitEnv, log, median, pickSpread, round, run, timeAsync } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** The generated repository's shape: `mNNN/dNN/fNN.txt`, FILES_PER_DIR files a folder. */
const SCALE = { files: 250_000, quickFiles: 25_000, filesPerDir: 20, dirsPerTop: 100, avgBytes: 512 };

const pad = (n, w) => String(n).padStart(w, '0');

/** The relative paths of the generated repository, in creation order (deterministic from its parameters). */
function scalePaths(files) {
  const paths = [];
  for (let k = 0; k < files; k++) {
    const f = k % SCALE.filesPerDir;
    const dir = Math.floor(k / SCALE.filesPerDir);
    paths.push(`m${pad(Math.floor(dir / SCALE.dirsPerTop), 3)}/d${pad(dir % SCALE.dirsPerTop, 2)}/f${pad(f, 2)}.txt`);
  }
  return paths;
}

const statusLines = (out) => out.split('\n').filter((l) => l !== '');

/** What the user does between jobs: commits everything (untimed). */
async function userCommit(root, message) {
  await git(['add', '-A'], {}, { cwd: root });
  await git(['commit', '-q', '--no-verify', '--allow-empty', '-m', message], {}, { cwd: root });
}

/**
 * The generated repository, made on first use and cached by its parameters; committed and clean,
 * its index warm (a `git status` ran).
 */
async function scaleRepo(ctx) {
  if (ctx.shared.scale) return ctx.shared.scale;
  const files = ctx.quick ? SCALE.quickFiles : SCALE.files;
  const key = `scale-f${files}-p${SCALE.filesPerDir}-b${SCALE.avgBytes}-v1`;
  const cacheDir = join(process.env.GAFFER_BENCH_CACHE ?? join(os.tmpdir(), 'gaffer-bench-cache'), key);
  const root = join(cacheDir, 'repo');
  const ready = join(cacheDir, 'ready');
  const paths = scalePaths(files);
  if (!existsSync(ready)) {
    rmSync(cacheDir, { recursive: true, force: true });
    const t0 = performance.now();
    let lastDir = '';
    for (const rel of paths) {
      const dir = rel.slice(0, rel.lastIndexOf('/'));
      if (dir !== lastDir) mkdirSync(join(root, dir), { recursive: true });
      lastDir = dir;
      writeFileSync(join(root, rel), fileBody(rel, SCALE.avgBytes));
    }
    const written = performance.now();
    await git(['init', '-q', '--template='], {}, { cwd: root });
    await userCommit(root, 'generated');
    writeFileSync(ready, `${new Date().toISOString()}\n`);
    log(
      `  fixture ${key}: ${files} files written in ${Math.round(written - t0)} ms, committed in ${Math.round(performance.now() - written)} ms (cached in ${cacheDir})`,
    );
  } else log(`  fixture ${key}: cached in ${cacheDir}`);
  // a run that crashed may have left changes: the user commits them
  const st = await git(['status', '--porcelain'], {}, { cwd: root });
  if (st.stdout !== '') await userCommit(root, 'left over by an earlier run');
  ctx.shared.scale = { root, paths, files, commits: 0 };
  return ctx.shared.scale;
}

/** Names the files a run adds: the cached repository keeps those of earlier runs. */
const RUN = Date.now().toString(36);

/** Rewrites `rels` with new small text (new size, bytes and mtime). */
function modify(root, rels, stamp) {
  for (const rel of rels) writeFileSync(join(root, rel), fileBody(`${rel} modified ${RUN} ${stamp}`, SCALE.avgBytes));
}

/** Writes a new file beside each of `nearRels`. */
function add(root, nearRels, stamp) {
  for (const [k, near] of nearRels.entries()) {
    const rel = near.replace(/[^/]+$/, `new-${RUN}-${stamp}-${k}.txt`);
    writeFileSync(join(root, rel), fileBody(rel, SCALE.avgBytes));
  }
}

/** A gaffer data dir that has checkpointed the repository (the cold case's last one, or one cold checkpoint, untimed). */
async function scaleDataDir(ctx, repo) {
  if (ctx.shared.scaleDataDir) return ctx.shared.scaleDataDir;
  const { takeSnapshot } = await evidence();
  const dataDir = join(ctx.tmp, 'scale-data');
  log('  first checkpoint of the scale repository (untimed)');
  await takeSnapshot({ workspace: repo.root, dataDir, jobId: 'scale-base', label: 'pre' });
  ctx.shared.scaleDataDir = dataDir;
  return dataDir;
}

/** scale_cold: gaffer's first checkpoint vs `git add -A` + `write-tree` into a fresh repository and index. */
async function scaleCold(ctx) {
  const { takeSnapshot } = await evidence();
  const repo = await scaleRepo(ctx);
  const gaffer = [];
  const ref = [];
  // a pair takes 1–10 minutes on a 2-core VM (load decides): fewer repetitions can be asked for, and the figure says so
  const reps = Number(process.env.GAFFER_BENCH_SCALE_COLD_REPS ?? ctx.reps);
  const notes =
    reps < 5
      ? [`scale_cold: ${reps} repetition(s) after the warm-up (GAFFER_BENCH_SCALE_COLD_REPS), not the 5 a figure needs`]
      : [];
  await repeat(
    ctx,
    'scale_cold',
    async (i) => {
      const dataDir = join(ctx.tmp, `scale-cold-data-${i}`);
      const refEnv = {
        gitDir: join(ctx.tmp, `scale-cold-ref-${i}.git`),
        workTree: repo.root,
        indexFile: join(ctx.tmp, `scale-cold-ref-${i}.index`),
      };
      await git(['init', '-q', '--bare', '--template=', refEnv.gitDir], {});
      const [g, r] = await pair(
        i,
        async () => {
          await run('sync', []);
          const { ms, value } = await timeAsync(() =>
            takeSnapshot({ workspace: repo.root, dataDir, jobId: 'cold', label: 'pre' }),
          );
          if (value.source !== 'checkpoint')
            throw new Error(`gaffer fell back to ${value.source}: ${value.fallbackReason}`);
          return ms;
        },
        async () => {
          await run('sync', []);
          const addMs = (await git(['add', '-A'], refEnv, { cwd: repo.root })).ms;
          return addMs + (await git(['write-tree'], refEnv, { cwd: repo.root })).ms;
        },
      );
      if (i > 0) {
        gaffer.push(g);
        ref.push(r);
      }
      rmSync(refEnv.gitDir, { recursive: true, force: true });
      rmSync(refEnv.indexFile, { force: true });
      // the last repetition's data dir is where the warm and diff cases start
      if (i === reps) ctx.shared.scaleDataDir = dataDir;
      else rmSync(dataDir, { recursive: true, force: true });
    },
    reps,
  );
  const gm = median(gaffer);
  const rm = median(ref);
  return {
    figures: {
      scale_checkpoint_cold_ms: round(gm),
      scale_git_add_ms: round(rm),
      scale_checkpoint_cold_ratio: round(gm / rm, 3),
    },
    samples: {
      scale_checkpoint_cold_ms: gaffer.map(Math.round),
      scale_git_add_ms: ref.map(Math.round),
      paired_ratio_scale_checkpoint_cold: pairedRatio(gaffer, ref),
    },
    rows: [
      msRow('scale_checkpoint_cold_ms', gm, `${repo.files} files in a git repository, fresh data dir`),
      msRow('scale_git_add_ms', rm, 'git add -A + write-tree, fresh repo + index'),
      ratioRow('scale_checkpoint_cold_ratio', gm / rm, 'scale_git_add_ms', rm, 1.1),
    ],
    notes,
  };
}

/**
 * scale_warm: the user changed 10 files and committed them; gaffer's re-checkpoint vs `git status
 * --porcelain` in the user's repository (its index warm from the commit).
 */
async function scaleWarm(ctx) {
  const { takeSnapshot } = await evidence();
  const repo = await scaleRepo(ctx);
  const dataDir = await scaleDataDir(ctx, repo);
  const gaffer = [];
  const ref = [];
  const notes = [];
  await repeat(ctx, 'scale_warm', async (i) => {
    modify(repo.root, pickSpread(repo.paths, 10, 300 + i), `warm-${i}`);
    await userCommit(repo.root, `user: warm ${i}`);
    const [g, r] = await pair(
      i,
      async () =>
        (await timeAsync(() => takeSnapshot({ workspace: repo.root, dataDir, jobId: 'scale-warm', label: `w${i}` })))
          .ms,
      async () => {
        const st = await git(['status', '--porcelain'], {}, { cwd: repo.root });
        const n = statusLines(st.stdout).length;
        if (n !== 0) notes.push(`scale_warm rep ${i}: git status listed ${n} paths after the commit, expected 0`);
        return st.ms;
      },
    );
    if (i > 0) {
      gaffer.push(g);
      ref.push(r);
    }
  });
  const gm = median(gaffer);
  const rm = median(ref);
  return {
    figures: {
      scale_checkpoint_warm_ms: round(gm),
      scale_git_status_ms: round(rm),
      scale_checkpoint_warm_ratio: round(gm / rm, 3),
    },
    samples: {
      scale_checkpoint_warm_ms: gaffer.map(Math.round),
      scale_git_status_ms: ref.map(Math.round),
      paired_ratio_scale_checkpoint_warm: pairedRatio(gaffer, ref),
    },
    rows: [
      msRow('scale_checkpoint_warm_ms', gm, `re-checkpoint after 10 of ${repo.files} files changed and a user commit`),
      msRow('scale_git_status_ms', rm, 'git status --porcelain, warm index'),
      ratioRow('scale_checkpoint_warm_ratio', gm / rm, 'scale_git_status_ms', rm, 1.2),
    ],
    notes,
  };
}

/**
 * scale_diff: the `pre` snapshot (untimed), then 8 files modified and 2 added; the `post` snapshot
 * (`like` pre, as the engine takes it) + diffSnapshots vs `git status --porcelain` on the same
 * changes. The user commits after each repetition.
 */
async function scaleDiff(ctx) {
  const { takeSnapshot, diffSnapshots } = await evidence();
  const repo = await scaleRepo(ctx);
  const dataDir = await scaleDataDir(ctx, repo);
  const gaffer = [];
  const ref = [];
  const notes = [];
  await repeat(ctx, 'scale_diff', async (i) => {
    const snap = (label, like) =>
      takeSnapshot({ workspace: repo.root, dataDir, jobId: `scale-diff-${i}`, label, ...(like ? { like } : {}) });
    const pre = await snap('pre');
    const picked = pickSpread(repo.paths, 10, 400 + i);
    modify(repo.root, picked.slice(0, 8), `diff-${i}`);
    add(repo.root, picked.slice(8), `diff-${i}`);
    const [g, r] = await pair(
      i,
      async () => {
        const { ms, value } = await timeAsync(async () => diffSnapshots(pre, await snap('post', pre)));
        if (value.modified.length !== 8 || value.added.length !== 2 || value.deleted.length !== 0)
          notes.push(
            `scale_diff rep ${i}: gaffer saw ${value.modified.length} modified / ${value.added.length} added / ${value.deleted.length} deleted, expected 8/2/0`,
          );
        return ms;
      },
      async () => {
        const st = await git(['status', '--porcelain'], {}, { cwd: repo.root });
        const n = statusLines(st.stdout).length;
        if (n !== 10) notes.push(`scale_diff rep ${i}: git status listed ${n} paths, expected 10`);
        return st.ms;
      },
    );
    if (i > 0) {
      gaffer.push(g);
      ref.push(r);
    }
    await userCommit(repo.root, `user: diff ${i}`);
  });
  const gm = median(gaffer);
  const rm = median(ref);
  return {
    figures: { scale_diff_ms: round(gm), scale_git_status_diff_ms: round(rm), scale_diff_ratio: round(gm / rm, 3) },
    samples: {
      scale_diff_ms: gaffer.map(Math.round),
      scale_git_status_diff_ms: ref.map(Math.round),
      paired_ratio_scale_diff: pairedRatio(gaffer, ref),
    },
    rows: [
      msRow('scale_diff_ms', gm, 'post snapshot + diffSnapshots, 8 modified + 2 new'),
      msRow('scale_git_status_diff_ms', rm, 'git status --porcelain, same changes'),
      ratioRow('scale_diff_ratio', gm / rm, 'scale_git_status_diff_ms', rm, 1.2),
    ],
    notes,
  };
}

// ---------------------------------------------------------------------------------------------
// scale_rss

/** The pids of a process and all its descendants (/proc/<pid>/task/<tid>/children). */
function processTree(pid) {
  const out = [];
  const todo = [pid];
  while (todo.length > 0) {
    const p = todo.pop();
    out.push(p);
    let tids = [];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        for (const c of readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8').split(' '))
          if (c.trim() !== '') todo.push(Number(c));
      } catch {
        // gone
      }
    }
  }
  return out;
}

/** VmRSS, VmHWM and RssAnon of a process, and its Pss (shared pages divided among their sharers), kB; null when it is gone. */
function memKb(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (source, key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(source)?.[1] ?? 0);
    return { rss: kb(text, 'VmRSS'), hwm: kb(text, 'VmHWM'), anon: kb(text, 'RssAnon'), pss: kb(rollup, 'Pss') };
  } catch {
    return null;
  }
}

/**
 * scale_rss: the peak memory of the process holding the evidence of the scale repository — a child
 * Node process (bench/scale-rss-child.mjs) that loads the evidence library with the spawner helper
 * as an engine does, takes a checkpoint (its data dir already warm on disk), then runs 3 jobs'
 * evidence (user commit → pre; 8 modified + 2 added → post like pre; diff).
 *
 * The figure is that process's own peak RSS (VmHWM, kept by the kernel) plus the spawner helper's
 * largest private RSS (RssAnon, sampled every 10 ms): the helper's file pages are the same Node
 * binary's, already counted once in the first. git's children are not in it: they are the
 * reference's own work (a `git status` of the repository holds its index as they do). Beside it,
 * from the same samples: the largest Σ Pss of the whole tree (the child, the helper, every git
 * child: what the machine held at one instant, each shared page counted once) and the largest
 * Σ VmRSS (the same, shared pages counted in every process that maps them).
 */
async function scaleRss(ctx) {
  const repo = await scaleRepo(ctx);
  const dataDir = await scaleDataDir(ctx, repo);
  const child = fork(join(here, 'scale-rss-child.mjs'), [repo.root, dataDir, String(repo.files)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let treeRss = 0;
  let treePss = 0;
  let childHwm = 0;
  let helperAnon = 0;
  const sample = () => {
    let rss = 0;
    let pss = 0;
    for (const pid of processTree(child.pid)) {
      const m = memKb(pid);
      if (m === null) continue;
      rss += m.rss;
      pss += m.pss;
      if (pid === child.pid) childHwm = Math.max(childHwm, m.hwm);
      else if (isSpawnerHelper(pid)) helperAnon = Math.max(helperAnon, m.anon);
    }
    treeRss = Math.max(treeRss, rss);
    treePss = Math.max(treePss, pss);
  };
  const timer = setInterval(sample, 10);
  const done = new Promise((resolve, reject) => {
    child.on('message', async (msg) => {
      try {
        if (msg.t === 'commit') {
          await userCommit(repo.root, `user: rss ${msg.n}`);
          child.send({ t: 'committed' });
        } else if (msg.t === 'done') {
          sample();
          child.send({ t: 'exit' });
          resolve(msg);
        }
      } catch (err) {
        reject(err);
      }
    });
    child.on('exit', (code) => (code === 0 ? undefined : reject(new Error(`the rss child exited ${code}`))));
  });
  let result;
  try {
    result = await done;
  } finally {
    clearInterval(timer);
  }
  await userCommit(repo.root, 'user: after rss');
  const mb = (kb) => round(kb / 1024, 1);
  const figure = childHwm + helperAnon;
  return {
    figures: {
      scale_rss_mb: mb(figure),
      scale_rss_node_hwm_mb: mb(childHwm),
      scale_rss_helper_anon_mb: mb(helperAnon),
      scale_rss_tree_pss_mb: mb(treePss),
      scale_rss_tree_rss_mb: mb(treeRss),
    },
    samples: { scale_rss_child: result },
    rows: [
      {
        figure: 'scale_rss_mb',
        value: mb(figure),
        exact: figure / 1024,
        unit: 'MB',
        reference:
          `evidence process VmHWM ${mb(childHwm)} MB + spawner helper's private RSS ${mb(helperAnon)} MB; ` +
          `with git's children, peak Σ Pss ${mb(treePss)} MB (Σ VmRSS ${mb(treeRss)} MB)`,
        bar: { max: 200 },
      },
    ],
  };
}

/** Whether a process is the spawner helper (src/platform/spawner/spawner-child.cjs). */
function isSpawnerHelper(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('spawner-child');
  } catch {
    return false;
  }
}

/**
 * scale_job: a whole job on the scale repository (submit → settled; shell `true`, verify none,
 * sandbox off) in one warm engine, the user having changed 10 files and committed them before
 * each; vs the raw git work the job implies (bench/cases.mjs JOB_SCRIPT: `add -A` + `write-tree`
 * twice, `diff-tree`) as one `sh` against a scratch repository and index kept between repetitions
 * (warm, as gaffer's shadow repository is).
 */
async function scaleJob(ctx) {
  const { Engine } = await engineMod();
  const { createRunners } = await runnersMod();
  const repo = await scaleRepo(ctx);
  const engine = await Engine.open({
    dataDir: join(ctx.tmp, 'scale-job-data'),
    maxParallel: 2,
    runners: createRunners({ sandbox: 'off' }),
    sandbox: await sandboxOff(),
    spawner: true,
  });
  const refEnv = {
    gitDir: join(ctx.tmp, 'scale-job-ref.git'),
    workTree: repo.root,
    indexFile: join(ctx.tmp, 'scale-job-ref.index'),
  };
  await git(['init', '-q', '--bare', '--template=', refEnv.gitDir], {});
  log('  the reference index and a first job, untimed (both start warm)');
  await run('sh', ['-c', JOB_SCRIPT], { cwd: repo.root, env: gitEnv(refEnv) });
  const body = {
    workspace: repo.root,
    verify: 'none',
    tasks: [{ instruction: 'benchmark: run a no-op command', type: 'research', command: 'true' }],
  };
  const runJob = () => doneJob(engine, body);
  await runJob();
  const gaffer = [];
  const ref = [];
  try {
    await repeat(ctx, 'scale_job', async (i) => {
      modify(repo.root, pickSpread(repo.paths, 10, 500 + i), `job-${i}`);
      await userCommit(repo.root, `user: job ${i}`);
      const [g, r] = await pair(
        i,
        async () => (await timeAsync(runJob)).ms,
        async () => (await run('sh', ['-c', JOB_SCRIPT], { cwd: repo.root, env: gitEnv(refEnv) })).ms,
      );
      if (i > 0) {
        gaffer.push(g);
        ref.push(r);
      }
    });
  } finally {
    await engine.close();
  }
  const gm = median(gaffer);
  const rm = median(ref);
  return {
    figures: { scale_job_ms: round(gm), scale_job_script_ms: round(rm), scale_job_overhead_ratio: round(gm / rm, 3) },
    samples: {
      scale_job_ms: gaffer.map(Math.round),
      scale_job_script_ms: ref.map(Math.round),
      paired_ratio_scale_job_overhead: pairedRatio(gaffer, ref),
    },
    rows: [
      msRow('scale_job_ms', gm, `whole job, shell \`true\`, verify none, ${repo.files} files, after a user commit`),
      msRow('scale_job_script_ms', rm, 'sh: add -A + write-tree ×2 + diff-tree, warm scratch index'),
      ratioRow('scale_job_overhead_ratio', gm / rm, 'scale_job_script_ms', rm, 1.3),
    ],
  };
}

/**
 * scale_fanout: one worktree job of 4 shell tasks, 2 at once (the cores), in the scale repository
 * after a user commit, against the script a person would write (bench/cases.mjs `fanoutPairs`:
 * per task `git worktree add -b` — a checkout of every file — the work, the check, `add -A` +
 * `commit`, `worktree remove`). GAFFER_BENCH_SCALE_FANOUT_REPS=n pairs after the warm-up (default
 * the run's repetitions; a pair is minutes at 250,000 files).
 */
async function scaleFanout(ctx) {
  const repo = await scaleRepo(ctx);
  modify(repo.root, pickSpread(repo.paths, 10, 900), 'fanout');
  await userCommit(repo.root, 'user: before the fan-out');
  const reps = Number(process.env.GAFFER_BENCH_SCALE_FANOUT_REPS ?? ctx.reps);
  // the repository is kept between runs, with the branches each run leaves: the script's are new each run
  const branches = `ref-${Date.now().toString(36)}`;
  const { gaffer, ref } = await fanoutPairs(ctx, {
    label: 'scale_fanout',
    root: repo.root,
    dataDir: join(ctx.tmp, 'scale-fanout-data'),
    refDir: join(ctx.tmp, 'scale-fanout-ref'),
    tasks: 4,
    parallel: 2,
    branches,
    reps,
  });
  const gm = median(gaffer);
  const rm = median(ref);
  return {
    figures: {
      scale_fanout_ms: round(gm),
      scale_fanout_script_ms: round(rm),
      scale_fanout_overhead_ratio: round(gm / rm, 3),
    },
    samples: {
      scale_fanout_ms: gaffer.map(Math.round),
      scale_fanout_script_ms: ref.map(Math.round),
      paired_ratio_scale_fanout: pairedRatio(gaffer, ref),
    },
    rows: [
      msRow('scale_fanout_ms', gm, `4 worktree tasks, 2 at once, ${repo.files} files, merge none, sandbox off`),
      msRow('scale_fanout_script_ms', rm, 'sh per task: worktree add -b + work + check + add/commit + worktree remove'),
      ratioRow('scale_fanout_overhead_ratio', gm / rm, 'scale_fanout_script_ms', rm, 1.5),
    ],
  };
}

/** The scale cases: opt-in (`--only scale` runs them all, in this order). */
export const scaleCases = [
  { name: 'scale_cold', group: 'scale', optIn: true, run: scaleCold },
  { name: 'scale_warm', group: 'scale', optIn: true, run: scaleWarm },
  { name: 'scale_diff', group: 'scale', optIn: true, run: scaleDiff },
  { name: 'scale_rss', group: 'scale', optIn: true, run: scaleRss },
  { name: 'scale_job', group: 'scale', optIn: true, run: scaleJob },
  { name: 'scale_fanout', group: 'scale', optIn: true, run: scaleFanout },
];
