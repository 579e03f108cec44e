#!/usr/bin/env node
// The quick-start demo: a real dispatch, end to end, in this process, on the embedded defaults.
// It copies examples/calc to a temp dir (a worker must never edit the checkout), gives gaffer a
// data dir of its own there, and has a `shell` worker fix the bug that makes `npm test` fail.
// gaffer checkpoints the folder, runs the worker, diffs what really changed, runs the tests itself
// (verify "auto" detects `npm test`), and answers with the verdict and the compact answer.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'gaffer-demo-'));
const workspace = join(root, 'calc');
cpSync(join(here, 'calc'), workspace, { recursive: true });

const gaffer = join(here, '..', 'bin', 'gaffer');
const args = [
  '--data-dir', join(root, 'data'),
  '--json',
  'dispatch',
  '--workspace', workspace,
  '--name', 'fix-add',
  '--task', 'add() in src/math.js subtracts; make it add so npm test passes',
  '--files', 'src/math.js',
  '--command', "sed -i 's/return a - b;/return a + b;/' src/math.js && echo 'fixed add() in src/math.js'",
  '--criteria', 'src/math.js changes',
  '--criteria', 'tests pass',
];
console.error(`$ gaffer ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ')}\n`);
const run = spawnSync(gaffer, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
if (run.error) throw run.error;
const answer = JSON.parse(run.stdout);
console.log(`\nverdict: ${answer.verdict}\n`);
console.log(JSON.stringify(answer, null, 2));
console.error(`\nstatus ${answer.status}, proof ${answer.result?.proof?.verdict}; exit ${run.status}. Workspace: ${workspace}`);
process.exitCode = answer.status === 'done' && answer.result?.proof?.verdict === 'proved' ? 0 : 1;
