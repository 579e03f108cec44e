#!/usr/bin/env node
// gaffer's benchmark (spec 10): `npm run bench` (full) or `npm run bench -- --quick`.
// Generates its fixtures in a temp dir, runs the cases of bench/cases.mjs, writes
// bench/results.json and prints a table. It measures; it never judges: the exit code is 0 whatever
// the numbers (non-zero only when a case crashes).
//
// Options: --quick (small fixtures, 3 repetitions), --only a,b (run some cases by name, or a
//          group of them: `--only scale` is the opt-in big-repository cases of bench/scale.mjs),
//          --keep (leave the temp dir for inspection).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { boardCases } from './board.mjs';
import { cases } from './cases.mjs';
import { clusterCases } from './cluster.mjs';
import { scaleCases } from './scale.mjs';
import { log, makeTree } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..');
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const keep = argv.includes('--keep');
const onlyArg = argv.find((a) => a.startsWith('--only'));
const only = onlyArg
  ? (onlyArg.includes('=') ? onlyArg.split('=')[1] : argv[argv.indexOf(onlyArg) + 1]).split(',')
  : null;

const SIZES = quick ? { bigFiles: 5_000, smallFiles: 200, reps: 3 } : { bigFiles: 50_000, smallFiles: 1_000, reps: 5 };

const tmp = mkdtempSync(join(os.tmpdir(), 'gaffer-bench-'));
let cleaned = false;
const cleanup = () => {
  if (cleaned) return;
  cleaned = true;
  if (keep) log(`temp dir kept: ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
};
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    cleanup();
    process.exit(130);
  });
}

/** Fixtures are generated on first use and shared between cases. */
function lazyTree(name, files) {
  let tree = null;
  return () => {
    if (tree === null) {
      const root = join(tmp, name);
      const t0 = performance.now();
      const paths = makeTree(root, files);
      log(`  fixture ${name}: ${files} files generated in ${Math.round(performance.now() - t0)} ms`);
      tree = { root, paths, files };
    }
    return tree;
  };
}

const ctx = {
  quick,
  reps: SIZES.reps,
  tmp,
  repoRoot,
  shared: {},
  bigTree: lazyTree('big-tree', SIZES.bigFiles),
  smallWorkspace: lazyTree('small-workspace', SIZES.smallFiles),
};

function sh(cmd, args, opts = {}) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], ...opts }).trim();
  } catch {
    return null;
  }
}

function machine() {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    model: cpus[0]?.model?.trim() ?? 'unknown',
    memory_gb: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    git: (sh('git', ['--version']) ?? 'git not found').replace(/^git version /, ''),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    // other work on the machine makes timings noisy: the 1-minute load average before and after
    load_avg_start: Math.round(os.loadavg()[0] * 100) / 100,
  };
}

function fmtValue(row) {
  if (typeof row.value !== 'number' || Number.isNaN(row.value)) return String(row.value);
  return row.unit ? `${row.value} ${row.unit}` : String(row.value);
}

function printTable(rows) {
  const header = ['figure', 'value', 'reference', 'bar', 'within bar'];
  const lines = rows.map((r) => [
    r.figure,
    fmtValue(r),
    r.reference ?? '—',
    r.bar ? `≤ ${r.bar.max}` : '—',
    r.bar ? ((r.exact ?? r.value) <= r.bar.max ? 'yes' : 'NO') : '—',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(fmt(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const l of lines) console.log(fmt(l));
}

async function main() {
  const started = performance.now();
  const info = machine();
  const results = {
    machine: info,
    commit: sh('git', ['rev-parse', 'HEAD'], { cwd: repoRoot }) ?? 'unknown',
    // the build is of the working tree: say when it differs from the commit (tracked changes in src/)
    dirty: (sh('git', ['status', '--porcelain', '--untracked-files=no', '--', 'src'], { cwd: repoRoot }) ?? '') !== '',
    quick,
    date: new Date().toISOString(),
    fixtures: { big_tree_files: SIZES.bigFiles, workspace_files: SIZES.smallFiles, repetitions: SIZES.reps, warmup: 1 },
    figures: {},
    samples: {},
    notes: [],
    errors: [],
  };
  const rows = [];
  log(`${quick ? 'quick' : 'full'} run in ${tmp}; ${SIZES.reps} repetitions after 1 warm-up`);
  for (const c of [...cases, ...boardCases, ...clusterCases, ...scaleCases]) {
    // an opt-in case runs only when named (by its name or its group's: `--only scale`)
    if (only === null ? c.optIn === true : !only.includes(c.name) && !only.includes(c.group)) continue;
    // the previous case's files (gigabytes for the cold checkpoints) are written out first, so
    // the kernel's writeback does not run into this case's measurements
    sh('sync', []);
    const t0 = performance.now();
    log(`case ${c.name}`);
    try {
      const out = await c.run(ctx);
      Object.assign(results.figures, out.figures ?? {});
      Object.assign(results.samples, out.samples ?? {});
      results.notes.push(...(out.notes ?? []));
      rows.push(...(out.rows ?? []));
    } catch (err) {
      const msg = `${c.name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
      log(`case CRASHED — ${msg}`);
      results.errors.push(msg);
      rows.push({ figure: c.name, value: 'crashed', reference: String(err?.message ?? err).slice(0, 60) });
    }
    log(`case ${c.name} took ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  // what cases shared (the board's served engine and browser, the cluster's processes) is closed once they all ran
  for (const close of ctx.shared.cleanups ?? []) {
    try {
      await close();
    } catch (err) {
      results.errors.push(`cleanup: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  info.load_avg_end = Math.round(os.loadavg()[0] * 100) / 100;
  results.total_s = Math.round((performance.now() - started) / 100) / 10;
  writeFileSync(join(here, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);

  console.log(
    `\ngaffer bench (${quick ? 'quick' : 'full'}) — ${info.cpus}× ${info.model}, ${info.memory_gb} GB, node ${info.node}, git ${info.git}, ${info.platform}`,
  );
  console.log(
    `commit ${results.commit}${results.dirty ? ' (+ uncommitted changes in src/)' : ''} · ${results.date} · ${results.total_s} s · load avg ${info.load_avg_start} → ${info.load_avg_end}\n`,
  );
  printTable(rows);
  for (const n of results.notes) console.log(`note: ${n}`);
  console.log(`\nwritten: bench/results.json`);
  return results.errors.length === 0 ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} finally {
  cleanup();
}
process.exitCode = code;
