// The benchmark cases. Each case is `{ name, run(ctx) }`; `run` resolves to
// `{ figures: {name: number}, rows: [...], samples: {...}, notes: [...] }` where a row is
// `{ figure, value, unit?, reference?, bar? }` (bar: `{ max }`). To add a figure (wait latency,
// SSE latency, throughput, related verify, server RSS, ...) write another function and append it
// to `cases` at the bottom.
//
// Fairness choices, once:
// - Fixtures are plain folders (no `.git`): gaffer lists them with its own shadow repository. The
//   references run git on the *same* folder (no copy, so the same page cache and the same inodes)
//   through a separate bare repository of their own: GIT_DIR / GIT_WORK_TREE / GIT_INDEX_FILE
//   point at temp paths, with the same hermetic config gaffer uses (no global or system config).
// - "Cold" means no repository, no index and no objects (a fresh data dir for gaffer, a fresh bare
//   repository and index for git, each repetition): both hash and write every object. It does not
//   mean a cold page cache: both read the tree from memory. `sync` runs (untimed) before each
//   timed cold run so neither pays for the other's dirty-page writeback.
// - The order gaffer/reference alternates every repetition; repetition 0 is the warm-up and is
//   not counted.
// - Child-process references are timed from spawn to exit with the same async spawn gaffer uses.
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { addFiles, git, gitEnv, log, makeTree, median, modifyFiles, pickSpread, round, run, timeAsync } from './lib.mjs';

const evidence = () => import('../dist/evidence/index.js');
const engineMod = () => import('../dist/engine/engine.js');

/** Runs `body(i)` for the warm-up (i = 0) and `ctx.reps` counted repetitions. */
async function repeat(ctx, label, body) {
  for (let i = 0; i <= ctx.reps; i++) {
    await body(i);
    log(`  ${label}: ${i === 0 ? 'warm-up' : `rep ${i}/${ctx.reps}`} done`);
  }
}

/** Times `a` and `b` in an order that alternates with the repetition. */
async function pair(i, a, b) {
  if (i % 2 === 0) return [await a(), await b()];
  const rb = await b();
  return [await a(), rb];
}

const ratioRow = (figure, value, refName, refMs, max) => ({
  figure,
  value: round(value, 2),
  exact: value,
  reference: `${refName} = ${Math.round(refMs)} ms`,
  bar: { max },
});
/** Median of the per-repetition ratios (each pair measured back to back): a noise check beside the figure. */
const pairedRatio = (g, r) => round(median(g.map((x, k) => x / r[k])), 3);

const msRow = (figure, value, note) => ({ figure, value: Math.round(value), unit: 'ms', reference: note });

// ---------------------------------------------------------------------------------------------

/** checkpoint_cold: gaffer's first checkpoint of the big tree vs `git add -A` + `write-tree` into a fresh index. */
async function checkpointCold(ctx) {
  const { takeSnapshot } = await evidence();
  const big = ctx.bigTree();
  const gaffer = [];
  const ref = [];
  await repeat(ctx, 'checkpoint_cold', async (i) => {
    const dataDir = join(ctx.tmp, `cold-data-${i}`);
    const refEnv = { gitDir: join(ctx.tmp, `cold-ref-${i}.git`), workTree: big.root, indexFile: join(ctx.tmp, `cold-ref-${i}.index`) };
    await git(['init', '-q', '--bare', '--template=', refEnv.gitDir], {});
    const [g, r] = await pair(
      i,
      async () => {
        await run('sync', []);
        const { ms, value } = await timeAsync(() => takeSnapshot({ workspace: big.root, dataDir, jobId: 'cold', label: 'pre' }));
        if (value.source !== 'checkpoint') throw new Error(`gaffer fell back to ${value.source}: ${value.fallbackReason}`);
        return ms;
      },
      async () => {
        await run('sync', []);
        const add = await git(['add', '-A'], refEnv, { cwd: big.root });
        const tree = await git(['write-tree'], refEnv, { cwd: big.root });
        return add.ms + tree.ms;
      },
    );
    if (i > 0) {
      gaffer.push(g);
      ref.push(r);
    }
    if (i === ctx.reps) {
      // the last repetition's state is the starting point of the warm and diff cases
      ctx.shared.big = { dataDir, refEnv };
    } else {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(refEnv.gitDir, { recursive: true, force: true });
      rmSync(refEnv.indexFile, { force: true });
    }
  });
  const gm = median(gaffer);
  const rm = median(ref);
  return {
    figures: { checkpoint_cold_ms: round(gm), git_add_ms: round(rm), checkpoint_cold_ratio: round(gm / rm, 3) },
    samples: { checkpoint_cold_ms: gaffer.map(Math.round), git_add_ms: ref.map(Math.round), paired_ratio_checkpoint_cold: pairedRatio(gaffer, ref) },
    rows: [
      msRow('checkpoint_cold_ms', gm, `${big.files} files, fresh data dir`),
      msRow('git_add_ms', rm, 'git add -A + write-tree, fresh repo + index'),
      ratioRow('checkpoint_cold_ratio', gm / rm, 'git_add_ms', rm, 1.3),
    ],
  };
}

/**
 * The big tree with a gaffer data dir that has checkpointed it and a reference repository whose
 * index and HEAD match it (so `git status` shows only what changes afterwards).
 */
async function warmBigState(ctx) {
  const big = ctx.bigTree();
  if (ctx.shared.big === undefined) {
    const { takeSnapshot } = await evidence();
    const dataDir = join(ctx.tmp, 'warm-data');
    const refEnv = { gitDir: join(ctx.tmp, 'warm-ref.git'), workTree: big.root, indexFile: join(ctx.tmp, 'warm-ref.index') };
    log('  building the warm state of the big tree (one cold checkpoint each)');
    await git(['init', '-q', '--bare', '--template=', refEnv.gitDir], {});
    await takeSnapshot({ workspace: big.root, dataDir, jobId: 'base', label: 'pre' });
    ctx.shared.big = { dataDir, refEnv };
  }
  const state = ctx.shared.big;
  if (!state.committed) {
    await refSync(state.refEnv, big.root);
    state.committed = true;
  }
  return { big, ...state };
}

/** Brings the reference repository's index and HEAD up to date with the tree (untimed). */
async function refSync(refEnv, cwd) {
  await git(['add', '-A'], refEnv, { cwd });
  await git(['commit', '-q', '--no-verify', '--allow-empty', '-m', 'sync'], refEnv, { cwd });
}

const statusLines = (out) => out.split('\n').filter((l) => l !== '');

/** checkpoint_warm: a re-checkpoint after 10 files changed vs `git status --porcelain` with an up-to-date index. */
async function checkpointWarm(ctx) {
  const { takeSnapshot } = await evidence();
  const { big, dataDir, refEnv } = await warmBigState(ctx);
  const gaffer = [];
  const ref = [];
  const notes = [];
  await repeat(ctx, 'checkpoint_warm', async (i) => {
    modifyFiles(big.root, pickSpread(big.paths, 10, 100 + i), `warm-${i}`);
    const [g, r] = await pair(
      i,
      async () => (await timeAsync(() => takeSnapshot({ workspace: big.root, dataDir, jobId: 'warm', label: `w${i}` }))).ms,
      async () => {
        const st = await git(['status', '--porcelain'], refEnv, { cwd: big.root });
        const n = statusLines(st.stdout).length;
        if (n !== 10) notes.push(`checkpoint_warm rep ${i}: git status listed ${n} paths, expected 10`);
        return st.ms;
      },
    );
    if (i > 0) {
      gaffer.push(g);
      ref.push(r);
    }
    await refSync(refEnv, big.root);
  });
  const gm = median(gaffer);
  const rm = median(ref);
  return {
    figures: { checkpoint_warm_ms: round(gm), git_status_ms: round(rm), checkpoint_warm_ratio: round(gm / rm, 3) },
    samples: { checkpoint_warm_ms: gaffer.map(Math.round), git_status_ms: ref.map(Math.round), paired_ratio_checkpoint_warm: pairedRatio(gaffer, ref) },
    rows: [
      msRow('checkpoint_warm_ms', gm, `re-checkpoint, 10 of ${big.files} files changed`),
      msRow('git_status_ms', rm, 'git status --porcelain, up-to-date index'),
      ratioRow('checkpoint_warm_ratio', gm / rm, 'git_status_ms', rm, 2.0),
    ],
    notes,
  };
}

/**
 * diff: what the engine does after the work — take the `post` snapshot and `diffSnapshots(pre,
 * post)` — after 8 files modified and 2 added. Both parts are timed (the post snapshot is most of
 * it); the `pre` snapshot is taken untimed before the changes. Reference: `git status
 * --porcelain` (which walks untracked files too) on the same tree and the same changes.
 */
async function diff(ctx) {
  const { takeSnapshot, diffSnapshots } = await evidence();
  const { big, dataDir, refEnv } = await warmBigState(ctx);
  const gaffer = [];
  const ref = [];
  const notes = [];
  await repeat(ctx, 'diff', async (i) => {
    const pre = await takeSnapshot({ workspace: big.root, dataDir, jobId: 'diff', label: `d${i}-pre` });
    const picked = pickSpread(big.paths, 10, 200 + i);
    modifyFiles(big.root, picked.slice(0, 8), `diff-${i}`);
    addFiles(big.root, picked.slice(8), `diff-${i}`);
    const [g, r] = await pair(
      i,
      async () => {
        const { ms, value } = await timeAsync(async () => {
          const post = await takeSnapshot({ workspace: big.root, dataDir, jobId: 'diff', label: `d${i}-post` });
          return diffSnapshots(pre, post);
        });
        if (value.modified.length !== 8 || value.added.length !== 2 || value.deleted.length !== 0) {
          notes.push(`diff rep ${i}: gaffer saw ${value.modified.length} modified / ${value.added.length} added / ${value.deleted.length} deleted, expected 8/2/0`);
        }
        return ms;
      },
      async () => {
        const st = await git(['status', '--porcelain'], refEnv, { cwd: big.root });
        const n = statusLines(st.stdout).length;
        if (n !== 10) notes.push(`diff rep ${i}: git status listed ${n} paths, expected 10`);
        return st.ms;
      },
    );
    if (i > 0) {
      gaffer.push(g);
      ref.push(r);
    }
    await refSync(refEnv, big.root);
  });
  const gm = median(gaffer);
  const rm = median(ref);
  return {
    figures: { diff_ms: round(gm), git_status_diff_ms: round(rm), diff_ratio: round(gm / rm, 3) },
    samples: { diff_ms: gaffer.map(Math.round), git_status_diff_ms: ref.map(Math.round), paired_ratio_diff: pairedRatio(gaffer, ref) },
    rows: [
      msRow('diff_ms', gm, 'post snapshot + diffSnapshots, 8 modified + 2 new'),
      msRow('git_status_diff_ms', rm, 'git status --porcelain, same changes'),
      ratioRow('diff_ratio', gm / rm, 'git_status_diff_ms', rm, 2.0),
    ],
    notes,
  };
}

/** The raw git work a job implies, as one shell script: checkpoint, checkpoint, diff. */
const JOB_SCRIPT = `set -e
git add -A
a=$(git write-tree)
git add -A
b=$(git write-tree)
git diff-tree -r -z --no-renames --name-status "$a" "$b"
`;

/**
 * job_overhead: a whole job (submit → settled; `shell` runner `true`, verify none) in one warm
 * process on the small workspace, vs the raw git work it implies run as a script (one `sh`
 * child, timed spawn to exit) against a scratch repository and index. Both are warm: gaffer's
 * shadow repository and index persist between jobs (that is the product), so the script's
 * scratch repository and index persist between repetitions too.
 */
async function jobOverhead(ctx) {
  const { Engine } = await engineMod();
  const ws = ctx.smallWorkspace();
  const engine = await Engine.open({ dataDir: join(ctx.tmp, 'job-data'), maxParallel: 2 });
  const refEnv = { gitDir: join(ctx.tmp, 'job-ref.git'), workTree: ws.root, indexFile: join(ctx.tmp, 'job-ref.index') };
  await git(['init', '-q', '--bare', '--template=', refEnv.gitDir], {});
  const body = { workspace: ws.root, verify: 'none', tasks: [{ instruction: 'benchmark: run a no-op command', command: 'true' }] };
  const gaffer = [];
  const ref = [];
  try {
    await repeat(ctx, 'job_overhead', async (i) => {
      const [g, r] = await pair(
        i,
        async () => {
          const { ms, value } = await timeAsync(async () => {
            const { job } = engine.submit(body);
            await engine.settled(job.id);
            return engine.get(job.id);
          });
          if (value.status !== 'done') throw new Error(`benchmark job ended ${value.status}: ${value.error ?? value.verdict}`);
          return ms;
        },
        async () => (await run('sh', ['-c', JOB_SCRIPT], { cwd: ws.root, env: gitEnv(refEnv) })).ms,
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
    figures: { job_ms: round(gm), job_script_ms: round(rm), job_overhead_ratio: round(gm / rm, 3) },
    samples: { job_ms: gaffer.map(Math.round), job_script_ms: ref.map(Math.round), paired_ratio_job_overhead: pairedRatio(gaffer, ref) },
    rows: [
      msRow('job_ms', gm, `whole job, shell \`true\`, verify none, ${ws.files} files`),
      msRow('job_script_ms', rm, 'sh: add -A + write-tree ×2 + diff-tree'),
      ratioRow('job_overhead_ratio', gm / rm, 'job_script_ms', rm, 2.0),
    ],
  };
}

/** compact_tokens_clean: the compact answer of a clean 1-worker job (examples/calc), chars / 4. */
async function compactClean(ctx) {
  const { Engine } = await engineMod();
  const ws = join(ctx.tmp, 'calc');
  cpSync(join(ctx.repoRoot, 'examples', 'calc'), ws, { recursive: true });
  const engine = await Engine.open({ dataDir: join(ctx.tmp, 'compact-data'), maxParallel: 2 });
  const notes = [];
  let tokens;
  try {
    const { job } = engine.submit({
      workspace: ws,
      verify: 'auto',
      tasks: [
        {
          instruction: 'add() in src/math.js subtracts; make it add so npm test passes',
          command: "sed -i 's/return a - b;/return a + b;/' src/math.js",
        },
      ],
    });
    await engine.settled(job.id);
    const answer = engine.get(job.id);
    const proof = answer.result?.proof?.verdict;
    if (answer.status !== 'done' || proof !== 'proved') notes.push(`compact_tokens_clean: the job ended ${answer.status}, proof ${proof} (expected done / proved)`);
    tokens = JSON.stringify(answer).length / 4;
  } finally {
    await engine.close();
  }
  return {
    figures: { compact_tokens_clean: round(tokens) },
    rows: [{ figure: 'compact_tokens_clean', value: round(tokens), unit: 'tokens', reference: 'JSON chars / 4', bar: { max: 400 } }],
    notes,
  };
}

/** Every case, in run order (warm and diff reuse the state the cold case leaves). */
export const cases = [
  { name: 'checkpoint_cold', run: checkpointCold },
  { name: 'checkpoint_warm', run: checkpointWarm },
  { name: 'diff', run: diff },
  { name: 'job_overhead', run: jobOverhead },
  { name: 'compact_tokens_clean', run: compactClean },
];
