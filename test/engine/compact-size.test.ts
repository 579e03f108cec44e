import { describe, expect, it } from 'vitest';
import { compactJobSchema, fullJobSchema } from '../../src/domain/answer-schema.js';
import type { CompactJob } from '../../src/domain/answer.js';
import type { EscalationJson } from '../../src/domain/escalation.js';
import { parseJobRequest } from '../../src/domain/request.js';
import type { JobResult, VerificationJson } from '../../src/domain/result.js';
import type { RunnerReport } from '../../src/domain/runner-report.js';
import { IdLedger } from '../../src/engine/queries/compact-ids.js';
import { dropPassingLines } from '../../src/engine/queries/compact-text.js';
import { buildCompact } from '../../src/engine/queries/compact.js';
import { renderCompact } from '../../src/interfaces/cli/render.js';
import type { AttemptRow, JobRow } from '../../src/store/store.js';
import { resultOf, verificationOf } from '../helpers/answer.js';

/*
 * issue 33 "Small on real projects": the compact answer of a clean job is at most 400 tokens, of a
 * failed one at most 1,500 (JSON chars / 4, as the bench measures); no failing id is said twice;
 * every list is bounded with its count; `?full=1` keeps everything. The jobs are stored rows as a
 * real project leaves them (a tape package's suite, a worker and two fix rounds, a climb).
 */

const WS = '/var/tmp/gaffer-verdict-Xb3k9Q/tape-parse-wrong-file';
const T0 = 1_796_540_346.7;

function spec(fixRounds: number) {
  return parseJobRequest(
    {
      title: 'parse: the tests fail, fix it',
      workspace: WS,
      verify: 'auto',
      fix_rounds: fixRounds,
      tasks: [
        {
          name: 'fix-parse',
          type: 'fix',
          instruction:
            'The test suite of this package fails since the last commit: parse() drops the quotes of nested strings. Find the bug in lib/ and fix it so `npm test` passes; do not change the tests.',
          files: ['lib/parse.js'],
          command: "sed -i 's/quote = false/quote = true/' lib/parse.js",
        },
      ],
    },
    { defaultRunner: null, available: ['shell'] },
  );
}

function report(summary: string, extra: Partial<RunnerReport> = {}): RunnerReport {
  return {
    status: 'done',
    outcome: 'success',
    exitCode: 0,
    signal: null,
    timedOut: false,
    isCancelled: false,
    stopReason: 'complete',
    error: null,
    summary,
    filesChanged: [],
    makesClaims: false,
    rounds: 0,
    toolCalls: 0,
    failedCalls: 0,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: null,
    durationMs: 412,
    session: null,
    modelServed: null,
    detection: null,
    refusals: [],
    sandboxed: true,
    network: 'none',
    writeAudit: 'ok',
    observed: '1 modified',
    spend: { billing: 'free', usd: null, requests: 0, tokens: 0, seconds: 0.4, unknown: null },
    ...extra,
  };
}

function attempt(worker: string, role: AttemptRow['role'], ord: number, r: RunnerReport): AttemptRow {
  return {
    jobId: 'c0ffee123456',
    worker,
    task: 'fix-parse',
    attempt: 1,
    role,
    runner: 'shell',
    model: null,
    entry: null,
    provider: null,
    status: r.status,
    outcome: r.outcome,
    queuedAt: T0,
    started: T0 + ord,
    finished: T0 + ord + 0.4,
    pgid: null,
    pgStart: null,
    lastEvent: 'done',
    state: null,
    report: r,
    logFile: null,
    ord,
    routeWhy: null,
    machine: null,
  };
}

function job(status: JobRow['status'], verdict: string, result: JobResult, fixRounds = 0): JobRow {
  return {
    id: 'c0ffee123456',
    owner: null,
    title: 'parse: the tests fail, fix it',
    workspace: WS,
    status,
    phase: null,
    verdict,
    error: null,
    created: T0,
    started: T0 + 0.01,
    finished: T0 + 41.3,
    spec: spec(fixRounds),
    result,
    checkpoint: null,
    pid: null,
    pidStart: null,
    cancelRequested: false,
    idemKey: null,
    requestHash: null,
    seq: 57,
  };
}

const totals = {
  tool_calls: 0,
  failed_calls: 0,
  rounds: 0,
  input_tokens: 0,
  output_tokens: 0,
  cost_usd: 0,
  spend: '1.2 s free',
  errors: 0,
  cancelled: 0,
};

function verification(extra: Partial<VerificationJson>): VerificationJson {
  return {
    mode: 'auto',
    ran: true,
    ok: true,
    inconclusive: false,
    kind: 'node',
    command: 'npm test',
    scope: 'all',
    exit_code: 0,
    timed_out: false,
    duration_s: 3.1,
    blocking: false,
    summary: '43 passed',
    failures: [],
    new_failures: [],
    pre_existing: [],
    flaky: [],
    output_tail: '',
    attempts: 1,
    ...extra,
  };
}

function changes(modified: string[], added: string[] = []) {
  return {
    source: 'checkpoint' as const,
    checkpoint: '50742ddd708e',
    count: modified.length + added.length,
    added,
    modified,
    deleted: [],
    truncated: false,
    snapshot_truncated: false,
    skipped: [],
    verification_wrote: [],
    git: {
      repo: true as const,
      dirty_count: modified.length + added.length,
      shortstat: `${modified.length} file changed, 2 insertions(+), 1 deletion(-)`,
    },
  };
}

/** (a) a worker fixes the bug; the whole suite passes. */
function cleanJob(): { row: JobRow; attempts: AttemptRow[] } {
  const result: JobResult = {
    files_changed: ['lib/parse.js'],
    claimed_only: [],
    changes: changes(['lib/parse.js']),
    verification: verification({}),
    fix_rounds_run: 0,
    proof: {
      verdict: 'proved',
      confidence: 1,
      shown: ['verification passed: 43 passed', '1 file changed on disk'],
      uncertainty: [],
    },
    totals,
    exit_code: 0,
  };
  const row = job(
    'done',
    '1/1 workers done · 1 file changed on disk · verification passed (43 passed) · proved 1.00',
    result,
  );
  return { row, attempts: [attempt('fix-parse', 'worker', 0, report(''))] };
}

// 40 failing ids as tape names them; 25 the work broke, 15 that failed before it
const ids = Array.from({ length: 40 }, (_, i) => `parse › nested quotes case ${String(i + 1).padStart(2, '0')}`);
const fresh = ids.slice(0, 25);
const before = ids.slice(25);

/** A 1.5 KB TAP tail: mostly passing `ok` lines with node:test's YAML, the failing ones among them. */
function tapTail(): string {
  const lines: string[] = [];
  for (let n = 1; n <= 60; n++) {
    const failing = n % 20 === 0 ? ids[n / 20 - 1] : undefined;
    if (failing) {
      lines.push(
        `# Subtest: ${failing}`,
        `not ok ${n} - ${failing}`,
        '  ---',
        '  duration_ms: 1.2',
        `  location: '${WS}/test/parse.test.js:${n}:1'`,
        "  failureType: 'testCodeFailure'",
        "  error: |-\n    Expected values to be strictly equal:\n    '\"a\"' !== 'a'",
        '  ...',
      );
    } else {
      lines.push(
        `# Subtest: parse › plain string ${n}`,
        `ok ${n} - parse › plain string ${n}`,
        '  ---',
        '  duration_ms: 0.31',
        "  type: 'test'",
        '  ...',
      );
    }
  }
  lines.push('1..60', '# tests 60', '# pass 57', '# fail 3');
  return lines.join('\n').slice(-1_500);
}

/** (b) a worker edits the wrong file; two fix rounds do not help; the task climbs a rung, which fails too. */
function failedJob(): { row: JobRow; attempts: AttemptRow[] } {
  const v = verification({
    ok: false,
    exit_code: 1,
    blocking: true,
    summary: '40 failed, 3 passed',
    failures: ids,
    new_failures: fresh,
    pre_existing: before,
    pre_existing_only: false,
    output_tail: tapTail(),
    attempts: 3,
    previous: [
      { summary: '40 failed, 3 passed', failures: ids },
      {
        summary: `the workers changed test/parse.test.js (modified); with the original tests, 3 still fail: ${ids.slice(0, 3).join('; ')}; the workers' tests: 38 failed, 5 passed`,
        failures: ids.slice(0, 38),
      },
    ],
    tests_touched: ['test/parse.test.js'],
    original_tests: {
      ran: true,
      ok: false,
      command: 'npm test',
      changed: ['test/parse.test.js (modified)'],
      summary: '3 failed, 40 passed',
      failures: [...ids.slice(0, 3), 'parse › a test the workers deleted'],
      blocking: true,
      tests_may_change: false,
    },
  });
  // issue 33's lists, when the verification has them: declared known, fixed since the checkpoint, gone after the work
  Object.assign(v, {
    known_failures: before.slice(0, 5),
    fixed: ['parse › single quotes', 'parse › empty string'],
    missing_tests: ['parse › unicode escapes'],
    checkpoint_failures: 17,
    failure_details: ids.slice(0, 6).map((id) => ({
      id,
      excerpt: `not ok - ${id}\n  Expected values to be strictly equal:\n  '"a"' !== 'a'\n${'    at TestContext.<anonymous> (test/parse.test.js:12:10)\n'.repeat(8)}`,
    })),
  });
  const autopsy = [
    {
      worker: 'fix-parse',
      entry: 'shell',
      runner: 'shell',
      model: null,
      status: 'done',
      verdict: 'fail' as const,
      gates: [],
      verification: '40 failed, 3 passed',
      abstained: null,
      note: 'edited lib/format.js',
    },
    {
      worker: 'fix-parse-2',
      entry: 'local-coder',
      runner: 'shell',
      model: 'qwen2.5-coder',
      status: 'done',
      verdict: 'fail' as const,
      gates: [],
      verification: '40 failed, 3 passed',
      abstained: null,
      note: 'changed the quoting in lib/format.js again',
    },
  ];
  const escalation: EscalationJson[] = [
    {
      task: 'fix-parse',
      from: 'shell',
      to: 'local-coder',
      why: `the verification failed: 40 failed, 3 passed (${ids.slice(0, 2).join(', ')})`,
      autopsy: autopsy.slice(0, 1),
    },
    {
      task: 'fix-parse',
      from: 'local-coder',
      to: null,
      why: 'the verification failed: 40 failed, 3 passed',
      returned: true,
      autopsy,
    },
  ];
  const result: JobResult = {
    files_changed: ['lib/format.js', 'test/parse.test.js'],
    claimed_only: [],
    changes: changes(['lib/format.js', 'test/parse.test.js']),
    verification: v,
    fix_rounds_run: 2,
    escalation,
    proof: {
      verdict: 'contradicted',
      confidence: 0.35,
      shown: ['2 files changed on disk'],
      uncertainty: [
        {
          code: 'original_tests_fail',
          detail: `with the checkpoint's tests, 4 fail: ${ids.slice(0, 3).join('; ')}`,
          penalty: 0.3,
        },
        {
          code: 'tests_touched',
          detail: 'the workers changed test/parse.test.js (modified) though the task may not change tests',
          penalty: 0.2,
        },
        { code: 'pre_existing_failures', detail: 'failures that were there before the work: 15', penalty: 0.15 },
      ],
    },
    totals: { ...totals, errors: 0 },
    exit_code: 1,
  };
  const verdict = `contradicted: the verification fails · 15 tests failed before the work and still fail (${before.slice(0, 3).join(', ')}…) · 1/1 workers done · 2 files changed on disk · verification FAILED (40 failed, 3 passed) · 2 fix rounds ran`;
  const row = job('partial', verdict, result, 2);
  const noisy = `${'building parse, step ok\n'.repeat(40)}edited lib/format.js; 40 tests still fail`;
  return {
    row,
    attempts: [
      attempt('fix-parse', 'worker', 0, report(noisy)),
      attempt(
        'fixer-1',
        'fixer',
        1,
        report(`${'re-running npm test\n'.repeat(20)}changed the quoting in lib/format.js`),
      ),
      attempt('fixer-2', 'fixer', 2, report('no change helped; the failures stay')),
    ],
  };
}

/** (c) a worker that adds 100,000 files (a vendored tree); the suite still passes. */
function hugeJob(): { row: JobRow; attempts: AttemptRow[] } {
  const added = Array.from({ length: 100_000 }, (_, i) => `vendor/pkg-${Math.floor(i / 100)}/file-${i % 100}.js`);
  const result: JobResult = {
    files_changed: added,
    claimed_only: added.slice(0, 50).map((p) => p.replace('vendor', 'vendored')),
    changes: changes([], added),
    verification: verification({ tests_touched: added.slice(0, 30) }),
    fix_rounds_run: 0,
    proof: {
      verdict: 'partial',
      confidence: 0.8,
      shown: ['verification passed: 43 passed', '100000 files changed on disk'],
      uncertainty: [
        {
          code: 'hidden_by_ignore',
          detail: `written, and hidden by ignore rules the workers wrote: ${added.slice(0, 2_000).join(', ')}`,
          penalty: 0.05,
        },
      ],
    },
    totals,
    exit_code: 0,
  };
  const row = job(
    'done',
    '1/1 workers done · 100000 files changed on disk · verification passed (43 passed) · partial 0.80: hidden_by_ignore',
    result,
  );
  return { row, attempts: [attempt('fix-parse', 'worker', 0, report('vendored the parser', { filesChanged: added }))] };
}

const tokens = (answer: CompactJob) => JSON.stringify(answer).length / 4;
const compactOf = ({ row, attempts }: { row: JobRow; attempts: AttemptRow[] }) =>
  buildCompact(row, attempts, { workerCap: 4 });
const fullOf = ({ row, attempts }: { row: JobRow; attempts: AttemptRow[] }) =>
  buildCompact(row, attempts, { workerCap: 4, full: true });

/** Every failing id the stored job holds, from each of its id lists. */
function failingIds(row: JobRow): string[] {
  const v = (row.result?.verification ?? {}) as Record<string, unknown>;
  const lists = ['failures', 'new_failures', 'pre_existing', 'flaky', 'known_failures', 'fixed', 'missing_tests'].map(
    (k) => (Array.isArray(v[k]) ? (v[k] as string[]) : []),
  );
  const more = [
    ...(row.result?.verification?.previous ?? []).flatMap((p) => p.failures),
    ...(row.result?.verification?.original_tests?.failures ?? []),
    ...((v.failure_details ?? []) as { id: string }[]).map((d) => d.id),
  ];
  return [...new Set([...lists.flat(), ...more])];
}

/** How often `id` occurs in the answer's JSON, the runner's own words aside (the output tail and the failures' excerpts quote their failing lines). */
function occurrences(answer: CompactJob, id: string): number {
  const copy = structuredClone(answer);
  const v = copy.result?.verification;
  if (v) delete v.output_tail;
  for (const d of v?.failure_details ?? []) d.excerpt = '';
  const text = JSON.stringify(copy);
  const needle = JSON.stringify(id).slice(1, -1);
  return text.split(needle).length - 1;
}

describe('the compact answer on a real project (issue 33)', () => {
  it('(a) a clean job answers in at most 400 tokens', () => {
    const answer = compactOf(cleanJob());
    console.log(`compact answer of the clean job: ${tokens(answer)} tokens`);
    expect(compactJobSchema.safeParse(answer).error).toBeUndefined();
    expect(tokens(answer)).toBeLessThanOrEqual(400);
    // an empty id list says nothing
    expect(verificationOf(answer)).not.toHaveProperty('failures');
    expect(verificationOf(answer)).toMatchObject({ ok: true, summary: '43 passed' });
  });

  it('(b) a failed job with 40 failing ids, two fix rounds and a climb answers in at most 1,500 tokens, each id said once', () => {
    const stored = failedJob();
    const answer = compactOf(stored);
    console.log(`compact answer of the failed job: ${tokens(answer)} tokens`);
    expect(compactJobSchema.safeParse(answer).error).toBeUndefined();
    expect(tokens(answer)).toBeLessThanOrEqual(1_500);

    const all = failingIds(stored.row);
    expect(all.length).toBeGreaterThan(40);
    const counts = new Map(all.map((id) => [id, occurrences(answer, id)]));
    const twice = [...counts].filter(([, n]) => n > 1);
    expect(twice).toEqual([]);
    // the ids shown are many, not none: each list names what no list before it did
    expect([...counts.values()].filter((n) => n === 1).length).toBeGreaterThanOrEqual(20);

    const v = verificationOf(answer);
    expect(v.new_failures).toEqual(fresh.slice(0, 10));
    expect(v.new_failures_count).toBe(25);
    // the declared known ones are named before the other pre-existing ones
    expect(v.known_failures).toEqual(before.slice(0, 5));
    // the original tests' failure is the verdict's story here; the missing test it names is not listed again
    expect(v.pre_existing).toEqual(before.slice(5, 15));
    expect(v.pre_existing_count).toBe(15);
    // the union of the lists before it: counted, not repeated
    expect(v).not.toHaveProperty('failures');
    expect(v.failures_count).toBe(40);
    expect(v.fixed).toEqual(['parse › single quotes', 'parse › empty string']);
    expect(v).not.toHaveProperty('missing_tests');
    expect(v.missing_tests_count).toBe(1);
    expect(v.failure_details).toHaveLength(3);
    expect(v.failure_details_count).toBe(6);
    expect(v.failure_details?.[0]).toMatchObject({ of: 'new_failures[0]' });
    for (const d of v.failure_details ?? []) expect(d.excerpt.length).toBeLessThanOrEqual(300);
    // every id of the original tests but the one no list named is counted there
    expect(v.original_tests?.failures).toEqual(['parse › a test the workers deleted']);
    expect(v.original_tests?.failures_count).toBe(4);
    expect(v.previous?.map((p) => p.failures_count)).toEqual([40, 38]);
    expect(v.previous?.[1]?.summary).toContain('3 still fail: see new_failures;');
    // gaffer's own words name a listed id by its list
    expect(answer.verdict).toContain('still fail (see known_failures…)');
    expect(resultOf(answer).proof?.uncertainty[0]?.detail).toBe(
      "with the checkpoint's tests, 4 fail: see new_failures",
    );
    expect(resultOf(answer).escalation?.[0]?.why).toBe(
      'the verification failed: 40 failed, 3 passed (see new_failures)',
    );
    expect(resultOf(answer).escalation?.[0]).not.toHaveProperty('autopsy');

    // the tail keeps the failing part, not the passing lines around it
    const tail = v.output_tail ?? '';
    expect(tail).toContain('not ok 60 - parse › nested quotes case 03');
    expect(tail).not.toMatch(/^ok \d+/m);
    expect(tail).not.toContain('duration_ms: 0.31');
    expect(tail).toMatch(/… \d+ passing/);
    expect(tail).not.toContain(WS);
  });

  it('(c) a job that adds 100,000 files answers bounded, each list with its count', () => {
    const answer = compactOf(hugeJob());
    console.log(`compact answer of the 100,000-file job: ${tokens(answer)} tokens`);
    expect(compactJobSchema.safeParse(answer).error).toBeUndefined();
    expect(tokens(answer)).toBeLessThanOrEqual(1_000);
    const result = resultOf(answer);
    expect(result.files_changed).toHaveLength(10);
    expect(result.files_changed_count).toBe(100_000);
    expect(result.claimed_only_count).toBe(50);
    expect(result.changes).toMatchObject({ count: 100_000, added_count: 100_000 });
    expect(result.changes?.added).toHaveLength(10);
    expect(result.workers[0]).toMatchObject({ files_changed_count: 100_000 });
    expect(result.workers[0]?.files_changed).toHaveLength(10);
    expect(verificationOf(answer)).toMatchObject({ tests_touched_count: 30 });
    expect(result.proof?.uncertainty[0]?.detail.length).toBeLessThanOrEqual(300);
  });

  it('shows the last rounds of a long fix loop and counts them all', () => {
    const stored = failedJob();
    const v = stored.row.result?.verification ?? expect.unreachable('no verification');
    v.previous = Array.from({ length: 5 }, (_, i) => ({
      summary: `round ${i + 1}: 40 failed, 3 passed`,
      failures: i === 4 ? ['parse › only in round 5'] : ids,
    }));
    const compact = verificationOf(compactOf(stored));
    expect(compact.previous_count).toBe(5);
    expect(compact.previous?.map((p) => p.summary)).toEqual([
      'round 3: 40 failed, 3 passed',
      'round 4: 40 failed, 3 passed',
      'round 5: 40 failed, 3 passed',
    ]);
    expect(compact.previous?.[2]).toEqual({
      summary: 'round 5: 40 failed, 3 passed',
      failures: ['parse › only in round 5'],
    });
  });

  it('?full=1 keeps every list and every id whole', () => {
    const failed = failedJob();
    const full = fullOf(failed);
    const v = verificationOf(full);
    expect(v.failures).toEqual(ids);
    expect(v.new_failures).toEqual(fresh);
    expect(v.previous?.[0]?.failures).toEqual(ids);
    expect(v.output_tail).toContain('ok 59 - parse › plain string 59');
    expect(full.verdict).toBe(failed.row.verdict);
    expect(resultOf(full).escalation?.[1]?.autopsy).toHaveLength(2);
    const huge = fullOf(hugeJob());
    expect(fullJobSchema.safeParse(huge).error).toBeUndefined();
    expect(resultOf(huge).files_changed).toHaveLength(100_000);
    expect(resultOf(huge).changes?.added).toHaveLength(100_000);
  });

  it('gaffer status says the counts, not the length of what the answer shows', () => {
    const text = renderCompact(compactOf(hugeJob()));
    expect(text).toMatch(/added: +(vendor\/pkg-0\/file-\d\.js, ){7}vendor\/pkg-0\/file-7\.js \+99992 more$/m);
    const failed = renderCompact(compactOf(failedJob()));
    expect(failed).toMatch(/new failures \(25\): +.* \+20 more$/m);
    expect(failed).toMatch(/known failures \(5\): /m);
    expect(failed).not.toMatch(/failing \(/);
  });
});

describe('the compact answer’s text rules (issue 33)', () => {
  it('leaves out passing-test lines of TAP, mocha, jest, pytest, go and cargo, saying how many', () => {
    const tap = [
      '# Subtest: adds',
      'ok 1 - adds',
      '  ---',
      '  duration_ms: 0.5',
      '  ...',
      '# Subtest: subtracts',
      'not ok 2 - subtracts',
      '  ---',
      '  error: boom',
      '  ...',
      'ok 3 - multiplies # SKIP',
      '1..3',
    ].join('\n');
    expect(dropPassingLines(tap)).toBe(
      [
        '… 1 passing',
        '# Subtest: subtracts',
        'not ok 2 - subtracts',
        '  ---',
        '  error: boom',
        '  ...',
        '… 1 passing',
        '1..3',
      ].join('\n'),
    );
    expect(
      dropPassingLines('  ✓ adds\n  ✔ subtracts (0.4ms)\n  1) divides\nPASS test/a.test.js\nFAIL test/b.test.js'),
    ).toBe('… 2 passing\n  1) divides\n… 1 passing\nFAIL test/b.test.js');
    expect(
      dropPassingLines(
        'tests/a.py::t1 PASSED [ 50%]\ntests/a.py::t2 FAILED [100%]\nPASSED tests/a.py::t1\nFAILED tests/a.py::t2 - assert 1 == 2',
      ),
    ).toBe('… 1 passing\ntests/a.py::t2 FAILED [100%]\n… 1 passing\nFAILED tests/a.py::t2 - assert 1 == 2');
    expect(
      dropPassingLines(
        '--- PASS: TestAdd (0.00s)\n--- FAIL: TestSub (0.00s)\nok  \texample.com/m\t0.01s\ntest adds ... ok\ntest subs ... FAILED',
      ),
    ).toBe('… 1 passing\n--- FAIL: TestSub (0.00s)\n… 2 passing\ntest subs ... FAILED');
  });

  it('says each id once, in the first list that holds it, and names listed ids in text by their list', () => {
    const ledger = new IdLedger();
    expect(ledger.say('new_failures', ['a b', 'c'])).toEqual({ shown: ['a b', 'c'] });
    expect(ledger.say('pre_existing', ['c', 'd'])).toEqual({ shown: ['d'], count: 2 });
    expect(ledger.say('failures', ['a b', 'c', 'd'])).toEqual({ shown: [], count: 3 });
    expect(
      ledger.say(
        'flaky',
        Array.from({ length: 12 }, (_, i) => `f${i}`),
      ),
    ).toMatchObject({ count: 12 });
    expect(ledger.placeOf('d')).toBe('pre_existing[0]');
    expect(ledger.referTo('still fail: a b; d · 3 passed')).toBe(
      'still fail: see new_failures, pre_existing · 3 passed',
    );
    // an id inside a word is not one
    expect(ledger.referTo('abc, a b, d.')).toBe('abc, see new_failures, pre_existing.');
    expect(ledger.referTo('nothing listed here')).toBe('nothing listed here');
  });
});
