#!/usr/bin/env node
// Redraws the attempt state machine in docs/architecture.md from the table in src/domain/attempt-table.ts
// (read from the build: run `npm run build` first). `--check` only reports a difference and exits 1.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
// DIST: another build's folder, for drawing without rewriting the dist/ others may be running from
const dist = resolve(root, process.env.DIST ?? 'dist');
const { drawAttemptSection, DIAGRAM_BEGIN, DIAGRAM_END } = await import(resolve(dist, 'domain/attempt-diagram.js'));
const docPath = resolve(root, 'docs/architecture.md');
const doc = readFileSync(docPath, 'utf8');
const begin = doc.indexOf(DIAGRAM_BEGIN);
const end = doc.indexOf(DIAGRAM_END);
if (begin < 0 || end < begin) {
  console.error(`docs/architecture.md has no generated block: put the two lines\n${DIAGRAM_BEGIN}\n${DIAGRAM_END}\nwhere the diagram goes`);
  process.exit(2);
}
const next = doc.slice(0, begin) + drawAttemptSection() + doc.slice(end + DIAGRAM_END.length);
if (process.argv.includes('--check')) {
  if (next !== doc) {
    console.error('docs/architecture.md: the attempt diagram differs from the table; run `npm run build && node scripts/draw-attempts.mjs`');
    process.exit(1);
  }
} else if (next !== doc) {
  writeFileSync(docPath, next);
  console.log('docs/architecture.md: attempt diagram redrawn');
}
