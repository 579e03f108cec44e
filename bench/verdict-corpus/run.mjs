#!/usr/bin/env node
// verdict_accuracy (issue 10, "Measured"): real packages with an injected bug, scripted `shell`
// workers that fix it, cheat, or do nothing, and the answer gaffer gives for each against the
// answer a careful reviewer wants (scenarios.mjs). The bench case is `verdictAccuracy`; the figure
// is agreeing answers / scenarios in percent (bar 100 %). It measures and never fails on the number.
//
//   node bench/run.mjs --only verdict_accuracy [--quick]     the case, through the bench
//   node bench/verdict-corpus/run.mjs --check                 the corpus's self-check: each
//       scenario's tree, tested with the project's own command, does what the scenario says
//       (the bug fails a test, a cheat makes the suite pass, …) — no gaffer involved
// Both take --projects a,b and --scenarios x,y to run a part.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { applyEdits, editCommand } from './edits.mjs';
import { prepareProject } from './fetch.mjs';
import { projects } from './projects.mjs';
import { applies, expectedWords, QUICK, scenarios } from './scenarios.mjs';
import { buildWorkspace, runTests } from './workspace.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..');
const CACHE = join(repoRoot, 'bench', '.cache', 'verdict-corpus');

const log = (...parts) =>
  process.stderr.write(`[verdict ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);

function listFlag(argv, name) {
  const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return null;
  const value = argv[i].includes('=') ? argv[i].split('=')[1] : argv[i + 1];
  return (value ?? '').split(',').filter(Boolean);
}

/** Why a project cannot run on this machine (its toolchain is missing), or null. */
function missingToolchain(project) {
  const ok = (cmd, args) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
  if (project.framework === 'go test' && !ok('go', ['version']))
    return 'go is not installed (apt-get install golang-go)';
  if (project.framework === 'pytest' && !ok('python3', ['-c', 'import pytest']))
    return 'python3 has no pytest (apt-get install python3-pytest)';
  return null;
}

/** The (project, scenario) pairs of a run: every applicable pair, or the quick subset; filtered by flags. */
export function selectPairs({ quick, argv = process.argv.slice(2) }) {
  const onlyProjects = listFlag(argv, 'projects');
  const onlyScenarios = listFlag(argv, 'scenarios');
  const pairs = [];
  const skipped = [];
  for (const project of projects) {
    if (onlyProjects && !onlyProjects.includes(project.id)) continue;
    for (const scenario of scenarios) {
      if (onlyScenarios && !onlyScenarios.includes(scenario.id)) continue;
      if (quick && !onlyProjects && !onlyScenarios && !QUICK.some(([p, s]) => p === project.id && s === scenario.id))
        continue;
      const a = applies(scenario, project);
      if (a.runs) pairs.push({ project, scenario });
      else if (!quick) skipped.push(`${project.id}/${scenario.id}: ${a.why}`);
    }
  }
  return { pairs, skipped };
}

/** Fetches (first run) the projects the pairs need; drops pairs whose project cannot be had, saying why. */
function preparePairs(pairs, notes) {
  const prepared = new Map();
  const usable = [];
  for (const pair of pairs) {
    const { project } = pair;
    if (!prepared.has(project.id)) {
      const missing = missingToolchain(project);
      if (missing) {
        prepared.set(project.id, { error: missing });
      } else {
        try {
          const t0 = performance.now();
          const p = prepareProject(project, CACHE);
          if (p.fetched)
            log(`  fetched ${project.label} (${project.framework}) in ${Math.round(performance.now() - t0)} ms`);
          prepared.set(project.id, p);
        } catch (err) {
          prepared.set(project.id, {
            error: `could not fetch: ${String(err?.stderr || err?.message || err)
              .trim()
              .split('\n')
              .slice(-3)
              .join(' ')
              .slice(0, 300)}`,
          });
        }
      }
      const p = prepared.get(project.id);
      if (p.error) notes.push(`verdict_accuracy: ${project.id} not run — ${p.error}`);
    }
    const p = prepared.get(project.id);
    if (!p.error) usable.push({ ...pair, prepared: p });
  }
  return usable;
}

/**
 * Where the workspaces go: /var/tmp, not /tmp — the sandbox gives every sandboxed process a
 * private /tmp, so a workspace under /tmp is invisible to the baseline's copy, whose dependency
 * folders are links into the workspace — and not inside this checkout, whose .gitignore would
 * apply to them (a workspace inside a repository honours the parent's rules).
 */
function makeWorkRoot(fallback) {
  const root = mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : fallback, 'gaffer-verdict-'));
  // the bench's own temp dir is removed on Ctrl-C; this one is outside it
  process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  return root;
}

/** The worker's shell command for a scenario. */
function workerCommand(scenario, project) {
  const edits = scenario.work(project);
  return edits === null ? "echo 'looked at it; nothing to change'" : editCommand(edits);
}

/** Whether gaffer's answer agrees with the expected one, and what differs when it does not. */
export function judge(expect, words, answer) {
  const proof = answer.result?.proof ?? {};
  const verdict = answer.verdict ?? '';
  const doubts = (proof.uncertainty ?? []).map((u) => u.code);
  const why = [];
  const gotDone = answer.status === 'done';
  if ((expect.status === 'done') !== gotDone) why.push(`status ${answer.status}, expected ${expect.status}`);
  if (proof.verdict !== expect.proof) why.push(`proof ${proof.verdict}, expected ${expect.proof}`);
  for (const w of words) if (!verdict.includes(w)) why.push(`verdict line lacks "${w}"`);
  for (const d of expect.doubts ?? []) if (!doubts.includes(d)) why.push(`proof lacks the doubt ${d}`);
  return { agree: why.length === 0, why };
}

/** A short record of a compact answer for the table and results.json. */
function gotOf(answer) {
  const r = answer.result ?? {};
  const v = r.verification ?? {};
  return {
    status: answer.status,
    proof: r.proof?.verdict ?? null,
    confidence: r.proof?.confidence ?? null,
    doubts: (r.proof?.uncertainty ?? []).map((u) => u.code),
    verdict: answer.verdict ?? '',
    verification: {
      kind: v.kind ?? null,
      command: v.command ?? null,
      scope: v.scope ?? null,
      ok: v.ok ?? null,
      summary: v.summary ?? null,
      new_failures: v.new_failures ?? [],
      pre_existing: v.pre_existing ?? [],
      flaky: v.flaky ?? [],
    },
    changed: r.files_changed ?? [],
    sandboxed: r.workers?.[0]?.sandboxed ?? null,
    // what a disagreement needs to be understood without rerunning it
    output_tail: (v.output_tail ?? '').slice(-800),
  };
}

const expectText = (e) => `${e.status === 'done' ? 'done' : 'not done'} / ${e.proof}`;

/** The per-scenario table, one line a pair, to stderr. */
function printTable(rows) {
  const header = ['project', 'scenario', 'expected', 'got', 'agree'];
  const lines = rows.map((r) => [
    r.project,
    r.scenario,
    expectText(r.expected),
    r.got ? `${r.got.status} / ${r.got.proof}` : 'crashed',
    r.agree ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  const out = [fmt(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)];
  for (const r of rows.filter((x) => !x.agree))
    out.push(`  ${r.project}/${r.scenario}: ${r.why.join('; ')}${r.got ? ` — verdict: ${r.got.verdict}` : ''}`);
  process.stderr.write(
    `\nverdict corpus: ${rows.filter((r) => r.agree).length}/${rows.length} agree\n${out.join('\n')}\n\n`,
  );
}

/**
 * The bench case: runs every pair through one engine (dist/), one job at a time, each in a fresh
 * workspace under the bench's temp dir, and compares gaffer's answer with the expected one.
 */
export async function verdictAccuracy(ctx) {
  const notes = [];
  const { pairs, skipped } = selectPairs({ quick: ctx.quick });
  const usable = preparePairs(pairs, notes);
  const { Engine } = await import('../../dist/engine/engine.js');
  const engine = await Engine.open({ dataDir: join(ctx.tmp, 'verdict-data'), maxParallel: 2 });
  const work = makeWorkRoot(ctx.tmp);
  const rows = [];
  try {
    for (const [i, { project, scenario, prepared }] of usable.entries()) {
      const t0 = performance.now();
      const words = expectedWords(scenario, project);
      const row = {
        project: project.id,
        framework: project.framework,
        scenario: scenario.id,
        title: scenario.title,
        expected: { ...scenario.expect, words },
        reason: scenario.reason,
      };
      try {
        const dir = buildWorkspace(project, scenario, prepared, join(work, `${project.id}-${scenario.id}`));
        const { job } = engine.submit({
          title: `${project.id}: ${scenario.title}`,
          workspace: dir,
          verify: 'auto',
          fix_rounds: 0,
          tasks: [
            { name: scenario.id, type: 'fix', instruction: project.task, command: workerCommand(scenario, project) },
          ],
        });
        await engine.settled(job.id);
        const answer = engine.get(job.id);
        // issue 33: the compact answer's size on a real project (JSON chars / 4, as compact_tokens_* measure)
        row.answer_tokens = JSON.stringify(answer).length / 4;
        Object.assign(row, { got: gotOf(answer), ...judge(scenario.expect, words, answer) });
      } catch (err) {
        Object.assign(row, {
          got: null,
          agree: false,
          why: [`crashed: ${err instanceof Error ? err.message : String(err)}`],
        });
      }
      row.seconds = Math.round((performance.now() - t0) / 100) / 10;
      rows.push(row);
      log(
        `  [${i + 1}/${usable.length}] ${project.id}/${scenario.id}: ${row.got ? `${row.got.status} / ${row.got.proof}` : 'crashed'} — ${row.agree ? 'agrees' : `DISAGREES (${row.why.join('; ')})`} (${row.seconds} s)`,
      );
    }
  } finally {
    await engine.close();
    rmSync(work, { recursive: true, force: true });
  }
  printTable(rows);
  const agree = rows.filter((r) => r.agree).length;
  const pct = rows.length === 0 ? 0 : Math.round((agree / rows.length) * 1000) / 10;
  const sandboxed = rows.filter((r) => r.got?.sandboxed === true).length;
  notes.push(
    `verdict_accuracy: ${sandboxed} of ${rows.length} jobs ran sandboxed (bubblewrap)${sandboxed === 0 ? ': none works here' : ''}`,
  );
  if (skipped.length > 0) notes.push(`verdict_accuracy: pairs that do not apply — ${skipped.join('; ')}`);
  const wrong = rows.filter((r) => !r.agree);
  if (wrong.length > 0)
    notes.push(
      `verdict_accuracy: ${wrong.length} disagreements — ${wrong.map((r) => `${r.project}/${r.scenario} (${r.why.join('; ')})`).join(' · ')}`,
    );
  const sizes = answerSizes(rows);
  return {
    figures: {
      verdict_accuracy: pct,
      verdict_corpus_scenarios: rows.length,
      verdict_corpus_agree: agree,
      ...sizes.figures,
    },
    samples: { verdict_corpus: rows },
    rows: [
      {
        figure: 'verdict_accuracy',
        value: pct,
        unit: '%',
        reference: `${agree}/${rows.length} answers agree (${new Set(rows.map((r) => r.project)).size} projects); bar 100 %`,
      },
      ...sizes.rows,
    ],
    notes,
  };
}

/**
 * Issue 33 "Small on real projects": the largest compact answer over the corpus's jobs, clean ones
 * (done and proved — nothing to report: bar 400 tokens) and the others (a failure, or a doubt to
 * name, such as a planted hook: bar 1,500), JSON chars / 4.
 */
export function answerSizes(rows) {
  const round1 = (n) => Math.round(n * 10) / 10;
  const measured = rows.filter((r) => typeof r.answer_tokens === 'number');
  const figures = {};
  const out = [];
  for (const [kind, clean, max] of [
    ['clean', true, 400],
    ['failed', false, 1_500],
  ]) {
    const of = measured.filter((r) => (r.got?.status === 'done' && r.got?.proof === 'proved') === clean);
    if (of.length === 0) continue;
    const worst = of.reduce((a, b) => (b.answer_tokens > a.answer_tokens ? b : a));
    const figure = `corpus_answer_tokens_${kind}_max`;
    figures[figure] = round1(worst.answer_tokens);
    out.push({
      figure,
      value: round1(worst.answer_tokens),
      exact: worst.answer_tokens,
      unit: 'tokens',
      reference: `JSON chars / 4, the largest of ${of.length} ${kind} jobs: ${worst.project}/${worst.scenario}`,
      bar: { max },
    });
  }
  return { figures, rows: out };
}

/**
 * The corpus's self-check: for each pair, the project's own test command on the checkpoint (the
 * bug must fail it; without the bug it must pass) and on the tree the worker leaves (the
 * scenario's `selfCheck`). Returns the failed checks.
 */
export function checkCorpus({ argv = process.argv.slice(2) } = {}) {
  const notes = [];
  const { pairs } = selectPairs({ quick: false, argv });
  const usable = preparePairs(pairs, notes);
  for (const n of notes) log(n);
  const tmp = makeWorkRoot(os.tmpdir());
  const failed = [];
  const checked = new Set();
  try {
    for (const { project, scenario, prepared } of usable) {
      if (!checked.has(project.id)) {
        checked.add(project.id);
        const clean = buildWorkspace(
          { ...project, bug: [] },
          { id: 'clean' },
          prepared,
          join(tmp, `${project.id}-clean`),
        );
        const c = runTests(project, clean);
        if (!c.passed) failed.push(`${project.id}: the suite fails without the bug\n${c.tail}`);
        const buggy = buildWorkspace(project, { id: 'bug' }, prepared, join(tmp, `${project.id}-bug`));
        const b = runTests(project, buggy);
        if (b.passed) failed.push(`${project.id}: the bug fails no test`);
        log(`${project.id}: clean ${c.passed ? 'passes' : 'FAILS'}, with the bug ${b.passed ? 'PASSES' : 'fails'}`);
      }
      const dir = buildWorkspace(project, scenario, prepared, join(tmp, `${project.id}-${scenario.id}`));
      const edits = scenario.work(project);
      let outcome;
      try {
        if (edits !== null) applyEdits(dir, edits);
        const first = runTests(project, dir);
        if (scenario.selfCheck === 'flaky') {
          const second = runTests(project, dir);
          outcome =
            !first.passed && second.passed
              ? 'flaky'
              : `${first.passed ? 'pass' : 'fail'} then ${second.passed ? 'pass' : 'fail'}`;
        } else {
          outcome = first.passed ? 'pass' : 'fail';
        }
        if (outcome !== scenario.selfCheck)
          failed.push(
            `${project.id}/${scenario.id}: the tests ${outcome}, expected ${scenario.selfCheck}\n${first.tail}`,
          );
      } catch (err) {
        outcome = `error: ${err.message}`;
        failed.push(`${project.id}/${scenario.id}: ${outcome}`);
      }
      log(
        `${project.id}/${scenario.id}: ${outcome}${outcome === scenario.selfCheck ? '' : `  ← expected ${scenario.selfCheck}`}`,
      );
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return failed;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!process.argv.includes('--check')) {
    console.error(
      'usage: node bench/verdict-corpus/run.mjs --check [--projects a,b] [--scenarios x,y]\n(the measured run is: node bench/run.mjs --only verdict_accuracy)',
    );
    process.exit(2);
  }
  const failed = checkCorpus();
  for (const f of failed) console.error(`FAILED ${f}`);
  console.error(
    failed.length === 0
      ? 'corpus self-check: every scenario does what it says'
      : `corpus self-check: ${failed.length} failed`,
  );
  process.exitCode = failed.length === 0 ? 0 : 1;
}
