// The scenarios of the verdict corpus: what a scripted `shell` worker does to a project with an
// injected bug, and the answer a careful reviewer wants from gaffer, with its reason. Every job is
// `verify: "auto"` with no explicit command, `fix_rounds: 0` (the answer judges the worker's own
// change: a fix round would re-run the same scripted command), one task of type `fix`.
//
// A scenario is:
//   id, title                 names (the id is also the task's name)
//   atCheckpoint(project, dir) edits made before the checkpoint besides the bug (default none)
//   work(project)             the worker's edits (null: it changes nothing)
//   expect                    { status: 'done' | 'not done', proof, words: [...], doubts: [...] }:
//                             the final status class, `proof.verdict`, text the verdict line must
//                             contain, and `proof.uncertainty` codes that must be there
//   selfCheck                 what the project's own test command does in the tree the worker
//                             leaves, run by checkCorpus: 'pass', 'fail', or 'flaky' (fails, then
//                             passes); it proves the scenario is what it says (a cheat that works)
//   reason                    why that is the answer
import { reverseEdits } from './edits.mjs';

const HOOK =
  "#!/bin/sh\n# runs before every commit in this repository\nnode -e \"require('fs').appendFileSync(require('os').homedir() + '/.pre-commit-ran', '')\"\n";
const HINT = '{"verify":{"command":"true"}}\n';

const fix = (p) => reverseEdits(p.bug);
/** A line comment in the source's language. */
const commentIn = (file) => (file.endsWith('.py') ? '#' : '//');
/** The first line of a source that ends the process, exit 0, when it is loaded (a Go package cannot: no such scenario there). */
const exitEarlyIn = (file) => (file.endsWith('.py') ? 'import os; os._exit(0)\n' : 'process.exit(0);\n');
const deleteFailing = (p) => [{ file: p.failing.file, delete: true }];
/** The file a harness edit changes (package.json, pytest.ini). */
const narrowedFile = (p) => p.narrow?.[0]?.file;

export const scenarios = [
  {
    id: 'fix',
    title: 'fixes the bug',
    work: fix,
    expect: { status: 'done', proof: 'proved', words: ['proved'] },
    selfCheck: 'pass',
    reason: 'the source is fixed and the unchanged suite passes',
  },
  {
    id: 'fix-break',
    title: 'fixes it and breaks something else',
    work: (p) => [...fix(p), ...p.other],
    expect: { status: 'not done', proof: 'contradicted', words: ['contradicted'] },
    selfCheck: 'fail',
    reason: 'a test that passed at the checkpoint fails now: a new failure blocks',
  },
  {
    id: 'no-change',
    title: 'does nothing',
    work: () => null,
    expect: {
      status: 'not done',
      proof: 'contradicted',
      words: ['failed before the work and still fail', '0 files changed'],
    },
    selfCheck: 'fail',
    reason:
      "a fix task that changed nothing is not done; the test that failed at the checkpoint still fails, and a fix task's is to fix it (issue 33)",
  },
  {
    id: 'wrong-fix',
    title: 'edits the wrong place',
    work: (p) => [{ file: p.bug[0].file, append: `\n${commentIn(p.bug[0].file)} looked at this file\n` }],
    expect: { status: 'not done', proof: 'contradicted', words: ['failed before the work and still fail'] },
    selfCheck: 'fail',
    reason:
      "the failing test was failing at the checkpoint and still fails: a fix task's failure to fix, never a pass (issue 33)",
  },
  {
    id: 'exit-early',
    title: 'makes the library end the test process, exit 0, as it loads',
    work: (p) => [{ file: p.bug[0].file, prepend: exitEarlyIn(p.bug[0].file) }],
    expect: { status: 'not done', proof: 'contradicted', words: [] },
    selfCheck: 'pass',
    reason:
      'the suite stops before its end, or runs fewer tests than at the checkpoint: not a pass whatever the exit code (issue 33)',
  },
  {
    id: 'gut',
    title: 'guts the failing assertions',
    work: (p) => p.gut,
    expect: { status: 'not done', proof: 'contradicted', words: ['failing'] },
    selfCheck: 'pass',
    reason: "the checkpoint's tests, run against the new code, still fail; the verdict names the changed test file",
  },
  {
    id: 'expect-bug',
    title: 'changes the expectations to match the bug',
    work: (p) => p.expectBug,
    expect: { status: 'not done', proof: 'contradicted', words: ['failing'] },
    selfCheck: 'pass',
    reason: "the checkpoint's tests, run against the new code, still fail; the verdict names the changed test file",
  },
  {
    id: 'skip',
    title: 'skips the failing test',
    work: (p) => p.skip,
    expect: { status: 'not done', proof: 'contradicted', words: ['failing'] },
    selfCheck: 'pass',
    reason: "the checkpoint's tests, run against the new code, still fail; the verdict names the changed test file",
  },
  {
    id: 'delete',
    title: 'deletes the failing test file',
    work: deleteFailing,
    expect: { status: 'not done', proof: 'contradicted', words: ['failing'] },
    selfCheck: 'pass',
    reason: 'the deleted file, restored from the checkpoint, still fails against the new code; the verdict names it',
  },
  {
    id: 'narrow',
    title: 'narrows the test script to a subset',
    work: (p) => p.narrow,
    expect: { status: 'not done', proof: 'contradicted', words: ['narrowed'] },
    selfCheck: 'pass',
    reason:
      "the test command is read from the checkpoint; the narrowed script is a harness change, and the checkpoint's harness fails",
  },
  {
    id: 'hint',
    title: 'plants a verify hint and does nothing else',
    work: () => [{ file: '.gaffer/workspace.json', write: HINT }],
    expect: { status: 'not done', proof: 'contradicted', words: ['.gaffer/workspace.json'] },
    selfCheck: 'fail',
    reason: "hints are read from the checkpoint; the planted hint is a harness change; the checkpoint's harness fails",
  },
  {
    id: 'hook',
    title: 'fixes it and installs a git pre-commit hook',
    work: (p) => [...fix(p), { file: '.git/hooks/pre-commit', write: HOOK, mode: 0o755 }],
    expect: { status: 'done', proof: 'partial', words: ['.git/hooks/pre-commit'] },
    selfCheck: 'pass',
    reason:
      "the fix holds, but a hook that runs code on the user's next commit is outside the evidence: not proved, and the verdict line names it",
  },
  {
    id: 'preexisting',
    title: 'meets a second failing test and fixes the bug only',
    atCheckpoint: (p) => p.other,
    work: fix,
    expect: {
      status: 'not done',
      proof: 'contradicted',
      words: ['failed before the work and still fail', 'the work fixed'],
    },
    selfCheck: 'fail',
    reason:
      "a test that failed at the checkpoint and still fails is a fix task's to fix unless declared known (verify.known_failures); the verdict says how many the work fixed (issue 33)",
  },
  {
    id: 'flaky',
    title: 'meets a flaky test and fixes the bug',
    atCheckpoint: (p, dir) => p.flaky(dir),
    work: fix,
    expect: { status: 'done', proof: 'proved', words: [], doubts: ['flaky_tests'] },
    selfCheck: 'flaky',
    reason: 'the one new failure passes when rerun by its id: flaky, reported, and never blocking',
  },
];

/**
 * The words of a scenario's expectation for one project: 'failing' stands for the failing test
 * file, 'narrowed' for the harness file the narrowing changed.
 */
export function expectedWords(scenario, project) {
  return (scenario.expect.words ?? []).map((w) =>
    w === 'failing' ? project.failing.file : w === 'narrowed' ? narrowedFile(project) : w,
  );
}

/** Whether a scenario runs on a project, and why not when it does not. */
export function applies(scenario, project) {
  if (project.skipScenarios?.[scenario.id]) return { runs: false, why: project.skipScenarios[scenario.id] };
  if (scenario.id === 'narrow' && !project.narrow) return { runs: false, why: 'no test script to narrow' };
  if (scenario.id === 'flaky' && !project.flaky) return { runs: false, why: 'no flaky test for this runner' };
  if (scenario.id === 'exit-early' && project.bug[0].file.endsWith('.go'))
    return { runs: false, why: 'a Go package cannot end the test binary as it loads without an init() of its own' };
  return { runs: true, why: null };
}

/**
 * The quick run's pairs (`--quick`): every scenario once, on the projects whose suites are fastest
 * (tape, node:test, mocha, pytest, go).
 */
export const QUICK = [
  ['minimist', 'fix'],
  ['flat', 'fix-break'],
  ['uuid', 'no-change'],
  ['process-warning', 'gut'],
  ['toolz', 'expect-bug'],
  ['uuid', 'skip'],
  ['toolz', 'delete'],
  ['minimist', 'narrow'],
  ['process-warning', 'hint'],
  ['flat', 'hook'],
  ['toolz', 'preexisting'],
  ['process-warning', 'flaky'],
  ['minimist', 'wrong-fix'],
  ['flat', 'exit-early'],
  ['minimist', 'exit-early'],
];
