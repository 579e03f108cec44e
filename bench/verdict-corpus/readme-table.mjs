#!/usr/bin/env node
// Prints docs/verification.md's verdict-corpus table (markdown) from a bench run's results:
//   node bench/verdict-corpus/readme-table.mjs [bench/results.json]
// One row a scenario, one column a project: gaffer's answer (status · proof), marked where it
// disagrees with the wanted one; the disagreements' verdict lines follow the table.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { projects } from './projects.mjs';
import { scenarios } from './scenarios.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const file = process.argv[2] ?? join(here, '..', 'results.json');
const results = JSON.parse(readFileSync(file, 'utf8'));
const rows = results.samples?.verdict_corpus;
if (!Array.isArray(rows)) {
  console.error(`${file} has no verdict corpus rows: run node bench/run.mjs --only verdict_accuracy first`);
  process.exit(1);
}

const ran = projects.filter((p) => rows.some((r) => r.project === p.id));
const wanted = (e) =>
  `${e.status === 'done' ? 'done' : 'not done'} · ${e.proof}${e.doubts?.length ? ` (${e.doubts.join(', ')})` : ''}`;
const cell = (r) => {
  if (!r) return '—';
  if (!r.got) return '**crashed** ✗';
  const answer = `${r.got.status} · ${r.got.proof}`;
  return r.agree ? answer : `**${answer}** ✗`;
};

const agree = rows.filter((r) => r.agree).length;
const out = [];
out.push(
  `\`verdict_accuracy\` ${results.figures?.verdict_accuracy ?? '?'} % (${agree}/${rows.length}), ${results.quick ? 'quick' : 'full'} run at ${String(results.commit).slice(0, 7)}${results.dirty ? ' (+ uncommitted src/)' : ''}, ${String(results.date).slice(0, 16).replace('T', ' ')} UTC:`,
);
out.push('');
out.push(`| worker | wanted | ${ran.map((p) => `${p.id} (${p.framework})`).join(' | ')} |`);
out.push(`| --- | --- | ${ran.map(() => '---').join(' | ')} |`);
for (const s of scenarios) {
  const mine = rows.filter((r) => r.scenario === s.id);
  if (mine.length === 0) continue;
  out.push(
    `| ${s.title} | ${wanted(s.expect)} | ${ran.map((p) => cell(mine.find((r) => r.project === p.id))).join(' | ')} |`,
  );
}
const wrong = rows.filter((r) => !r.agree);
if (wrong.length > 0) {
  out.push('');
  out.push('Where the answer differs (✗):');
  out.push('');
  for (const r of wrong)
    out.push(
      `- ${r.project} / ${r.title}: ${r.why.join('; ')}${r.got ? ` — \`${r.got.verdict.replaceAll('`', "'")}\`` : ''}`,
    );
}
console.log(out.join('\n'));
