import { describe, expect, it } from 'vitest';
import {
  auditBatchWrites,
  auditWrites,
  declaredOutOfPlanEdits,
  describeViolation,
  policyRoleOf,
  writePolicyFor,
  type PolicyTask,
  type WrittenPaths,
} from '../../src/domain/write-policy.js';
import { taskOrderOf, taskPhases } from '../../src/domain/phase-order.js';
import { admitAttempt, transition, type Attempt, type AttemptEvent } from '../../src/domain/attempt-machine.js';
import { workerEndOf } from '../../src/domain/attempt-results.js';
import { isTestFilePath } from '../../src/verification/harness.js';

const task = (name: string, over: Partial<PolicyTask> = {}): PolicyTask => ({
  name,
  type: 'implement',
  files: [],
  outputs: [],
  tests_may_change: false,
  ...over,
});
const wrote = (over: Partial<WrittenPaths>): WrittenPaths => ({ added: [], modified: [], deleted: [], ...over });
const audit = (
  t: PolicyTask,
  written: WrittenPaths,
  opts: {
    role?: 'worker' | 'fixer';
    job?: PolicyTask[];
    declared?: string[];
    exempt?: string[];
    failed?: boolean;
  } = {},
) =>
  auditWrites(writePolicyFor(t, opts.role ?? 'worker', opts.job ?? [t]), written, {
    isTestFile: isTestFilePath,
    declared: opts.declared ?? [],
    exempt: opts.exempt ?? [],
    workerFailed: opts.failed ?? false,
  });

describe('the write policy table (spec 06)', () => {
  it('puts each task type and role on its row', () => {
    for (const type of ['implement', 'fix', 'sweep', 'design', 'test'] as const)
      expect(policyRoleOf({ type }, 'worker')).toBe('implementer');
    for (const type of ['review', 'verify', 'judge', 'triage', 'research'] as const)
      expect(policyRoleOf({ type }, 'worker')).toBe('reviewer');
    expect(policyRoleOf({ type: 'review' }, 'fixer')).toBe('fixer');
    expect(policyRoleOf({ type: 'implement' }, 'reviewer')).toBe('reviewer');
  });

  it('an implementer given files may write them and its outputs, nothing else', () => {
    const t = task('a', { files: ['src/a.py'], outputs: ['out/report.json'] });
    expect(audit(t, wrote({ modified: ['src/a.py'], added: ['out/report.json'] }))).toEqual({
      verdict: 'ok',
      outside: [],
    });
    expect(audit(t, wrote({ modified: ['src/a.py', 'src/b.py'] }))).toEqual({
      verdict: 'violation',
      outside: ['src/b.py'],
    });
  });

  it('a named folder covers what is below it', () => {
    const t = task('a', { files: ['src/'] });
    expect(audit(t, wrote({ added: ['src/x/y.ts'], modified: ['src'] })).verdict).toBe('ok');
    expect(audit(t, wrote({ added: ['srcx/y.ts'] })).outside).toEqual(['srcx/y.ts']);
  });

  it('an implementer given no files may write anything but an existing test, unless its task lets tests change', () => {
    const t = task('a');
    expect(audit(t, wrote({ modified: ['lib/x.js', 'README.md'], added: ['test/new.test.js'] })).verdict).toBe('ok');
    expect(audit(t, wrote({ modified: ['test/math.test.js'], deleted: ['tests/test_api.py'] }))).toEqual({
      verdict: 'violation',
      outside: ['test/math.test.js', 'tests/test_api.py'],
    });
    expect(audit(task('a', { tests_may_change: true }), wrote({ modified: ['test/math.test.js'] })).verdict).toBe('ok');
    // the coordinator naming the test file is the task allowing it
    expect(audit(task('a', { files: ['test/math.test.js'] }), wrote({ modified: ['test/math.test.js'] })).verdict).toBe(
      'ok',
    );
  });

  it('a reviewer may write only its outputs', () => {
    const r = task('r', { type: 'review', outputs: ['review.md'] });
    expect(audit(r, wrote({ added: ['review.md'] })).verdict).toBe('ok');
    expect(audit(r, wrote({ added: ['review.md'], modified: ['src/a.py'] }))).toEqual({
      verdict: 'violation',
      outside: ['src/a.py'],
    });
    expect(audit(task('r', { type: 'research' }), wrote({ added: ['notes.txt'] })).outside).toEqual(['notes.txt']);
  });

  it('an implementer may declare out-of-plan edits; a reviewer may not, and a declaration never opens a test', () => {
    const t = task('a', { files: ['src/a.py'] });
    expect(audit(t, wrote({ modified: ['src/a.py', 'setup.cfg'] }), { declared: ['setup.cfg'] }).verdict).toBe('ok');
    expect(audit(t, wrote({ modified: ['tests/test_a.py'] }), { declared: ['tests/test_a.py'] }).outside).toEqual([
      'tests/test_a.py',
    ]);
    expect(
      audit(task('r', { type: 'review' }), wrote({ modified: ['src/a.py'] }), { declared: ['src/a.py'] }).verdict,
    ).toBe('violation');
  });

  it('siblings’ declared outputs never count against a worker', () => {
    expect(
      audit(task('r', { type: 'review' }), wrote({ added: ['impl-notes.md'] }), { exempt: ['impl-notes.md'] }).verdict,
    ).toBe('ok');
  });

  it('a fixer may write what the job’s implementers may, and tests when a task lets them change', () => {
    const a = task('a', { files: ['src/a.py'] });
    const b = task('b', { files: ['src/b.py'], tests_may_change: true });
    const r = task('r', { type: 'review', outputs: ['review.md'] });
    const policy = writePolicyFor(a, 'fixer', [a, b, r]);
    expect(policy).toEqual({ role: 'fixer', anywhere: false, paths: ['src/a.py', 'src/b.py'], testsMayChange: true });
    expect(audit(a, wrote({ modified: ['src/b.py'] }), { role: 'fixer', job: [a, b, r] }).verdict).toBe('ok');
    expect(audit(a, wrote({ modified: ['review.md'] }), { role: 'fixer', job: [a, b, r] }).verdict).toBe('violation');
    expect(writePolicyFor(a, 'fixer', [a, task('c')]).anywhere).toBe(true);
  });

  it('a worker that failed and wrote nothing is `failed-no-mutation`; one that failed after writing is audited as any', () => {
    const t = task('a', { files: ['src/a.py'] });
    expect(audit(t, wrote({}), { failed: true }).verdict).toBe('failed-no-mutation');
    expect(audit(t, wrote({ modified: ['src/a.py'] }), { failed: true }).verdict).toBe('ok');
    expect(audit(t, wrote({}), { failed: false }).verdict).toBe('ok');
  });

  it('workers that shared the workspace at once are charged only a path none of them may write, each of them', () => {
    const a = writePolicyFor(task('a', { files: ['a.py'] }), 'worker', []);
    const b = writePolicyFor(task('b', { files: ['b.py'] }), 'worker', []);
    const any = writePolicyFor(task('c'), 'worker', []);
    const written = wrote({ modified: ['a.py', 'b.py', 'c.py'] });
    const both = auditBatchWrites(
      [
        { policy: a, workerFailed: false },
        { policy: b, workerFailed: false },
      ],
      written,
      { isTestFile: isTestFilePath },
    );
    expect(both).toEqual([
      { verdict: 'violation', outside: ['c.py'] },
      { verdict: 'violation', outside: ['c.py'] },
    ]);
    const withAnywhere = auditBatchWrites(
      [
        { policy: a, workerFailed: false },
        { policy: any, workerFailed: false },
      ],
      written,
      { isTestFile: isTestFilePath },
    );
    expect(withAnywhere.map((x) => x.verdict)).toEqual(['ok', 'ok']);
  });

  it('says the role and at most five paths, then how many more', () => {
    const policy = writePolicyFor(task('r', { type: 'review' }), 'worker', []);
    const paths = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    expect(describeViolation(policy, paths)).toBe(
      'wrote outside its write policy (a reviewer may write nothing in the project): a, b, c, d, e +2 more',
    );
  });

  it('reads an "Out-of-plan edits" list from a report', () => {
    const summary = 'Done.\n\n## Out-of-plan edits\n- `setup.cfg`\n- ./docs/usage.md\n\nAll tests pass.\n- not/this.md';
    expect(declaredOutOfPlanEdits(summary)).toEqual(['setup.cfg', 'docs/usage.md']);
    expect(declaredOutOfPlanEdits('**Out-of-plan edits:**\n* a.txt')).toEqual(['a.txt']);
    expect(declaredOutOfPlanEdits('nothing declared')).toEqual([]);
  });

  it('a violation makes the attempt’s worker `error`, whatever its process said; a cancelled one stays cancelled', () => {
    const walk = (events: AttemptEvent[]): Attempt =>
      events.reduce(
        (a, e) => {
          const step = transition(a, e);
          if (!step.ok) throw new Error(step.message);
          return step.next;
        },
        admitAttempt('t', [], 'first'),
      );
    const start: AttemptEvent[] = [
      { type: 'gates_passed' },
      { type: 'placement_acquired' },
      { type: 'executor_started' },
    ];
    const done = walk([
      ...start,
      { type: 'exited', facts: { exit: { status: 'done', outcome: 'success' } } },
      { type: 'evidence_taken', facts: { writeViolation: true } },
    ]);
    expect(workerEndOf(done)).toEqual({ status: 'error', outcome: 'panic' });
    const clean = walk([
      ...start,
      { type: 'exited', facts: { exit: { status: 'done', outcome: 'success' } } },
      { type: 'evidence_taken', facts: { writeViolation: false } },
    ]);
    expect(workerEndOf(clean)).toEqual({ status: 'done', outcome: 'success' });
  });
});

describe('phase order (spec 06)', () => {
  const t = (name: string, type: PolicyTask['type']) => ({ name, type });

  it('runs review and verify tasks after the implementers, in a later phase', () => {
    const tasks = [t('rev', 'review'), t('impl', 'implement'), t('check', 'verify'), t('notes', 'research')];
    expect(taskPhases(tasks).map((p) => p.map((x) => x.name))).toEqual([
      ['impl', 'notes'],
      ['rev', 'check'],
    ]);
    expect(taskOrderOf(tasks, true)).toMatchObject({
      by: 'phase',
      from: ['rev', 'impl', 'check', 'notes'],
      to: ['impl', 'notes', 'rev', 'check'],
      phases: [
        ['impl', 'notes'],
        ['rev', 'check'],
      ],
    });
    expect(taskOrderOf(tasks, false)?.to).toEqual(['impl', 'notes', 'rev', 'check']);
  });

  it('says nothing when the order holds: no implementer, no reviewer, or a sequential job already in order', () => {
    expect(taskOrderOf([t('a', 'review'), t('b', 'verify')], true)).toBeNull();
    expect(taskOrderOf([t('a', 'implement'), t('b', 'fix')], true)).toBeNull();
    expect(taskOrderOf([t('a', 'implement'), t('b', 'review')], false)).toBeNull();
    // a parallel job is split in batches: that is said even when the order is the same
    expect(taskOrderOf([t('a', 'implement'), t('b', 'review')], true)?.phases).toEqual([['a'], ['b']]);
  });
});
