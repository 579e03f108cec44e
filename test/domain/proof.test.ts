import { describe, expect, it } from 'vitest';
import { computeProof, type ProofFacts } from '../../src/domain/proof.js';
import type { VerificationJson } from '../../src/domain/result.js';
import type { ChangesJson } from '../../src/domain/changes.js';
import { buildVerdict } from '../../src/domain/verdict.js';

const changes = (count: number, extra: Partial<ChangesJson> = {}): ChangesJson => ({
  source: 'checkpoint',
  checkpoint: 'abc',
  count,
  added: [],
  modified: Array.from({ length: count }, (_, i) => `f${i}`),
  deleted: [],
  truncated: false,
  snapshot_truncated: false,
  skipped: [],
  verification_wrote: [],
  ...extra,
});
const verification = (extra: Partial<VerificationJson>): VerificationJson => ({
  mode: 'auto',
  ran: true,
  ok: true,
  inconclusive: false,
  kind: 'node',
  command: 'npm test',
  scope: 'all',
  exit_code: 0,
  timed_out: false,
  duration_s: 1,
  blocking: false,
  summary: '3 passed',
  failures: [],
  new_failures: [],
  pre_existing: [],
  flaky: [],
  output_tail: '',
  attempts: 1,
  ...extra,
});
const facts = (extra: Partial<ProofFacts> = {}): ProofFacts => ({
  changes: changes(1),
  verification: verification({}),
  claimedOnly: [],
  claimedCount: 0,
  workerStatuses: ['done'],
  expectsChanges: true,
  criteria: null,
  cancelled: false,
  largeFilesByStat: false,
  testsWeakened: false,
  ...extra,
});
const codes = (f: ProofFacts) => computeProof(f).uncertainty.map((u) => u.code);

describe('the proof (spec 03)', () => {
  it('proved: a conclusive pass, a non-empty diff, no doubts', () => {
    expect(computeProof(facts())).toEqual({
      verdict: 'proved',
      confidence: 1,
      shown: ['verification passed: 3 passed', '1 file changed on disk'],
      uncertainty: [],
    });
  });

  it('contradicted: a blocking failure, a claimed file that did not change, or an unmet criterion', () => {
    expect(computeProof(facts({ verification: verification({ ok: false, blocking: true }) })).verdict).toBe(
      'contradicted',
    );
    expect(computeProof(facts({ claimedOnly: ['src/x.ts'], claimedCount: 1 })).verdict).toBe('contradicted');
    expect(
      computeProof(facts({ criteria: { complete: false, met: [], unmet: ['docs/x.md'], unchecked: [] } })).verdict,
    ).toBe('contradicted');
  });

  it('unproved: nothing ran that could show it', () => {
    expect(computeProof(facts({ verification: verification({ ran: false, ok: null, summary: 'off' }) }))).toMatchObject(
      { verdict: 'unproved', confidence: 0.5 },
    );
    expect(computeProof(facts({ verification: verification({ ok: null, inconclusive: true }) }))).toMatchObject({
      verdict: 'unproved',
      confidence: 0.6,
    });
  });

  it('partial: pre-existing failures only, nothing changed, weakened tests, unchecked criteria, a worker not done', () => {
    expect(
      computeProof(facts({ verification: verification({ ok: false, pre_existing_only: true, pre_existing: ['a'] }) })),
    ).toMatchObject({ verdict: 'partial', confidence: 0.85 });
    expect(computeProof(facts({ changes: changes(0) })).verdict).toBe('partial');
    expect(computeProof(facts({ changes: changes(0), expectsChanges: false })).verdict).toBe('proved');
    expect(computeProof(facts({ testsWeakened: true })).verdict).toBe('partial');
    expect(
      computeProof(facts({ criteria: { complete: false, met: [], unmet: [], unchecked: ['a', 'b', 'c', 'd'] } })),
    ).toMatchObject({ verdict: 'partial', confidence: 0.7 });
    expect(computeProof(facts({ workerStatuses: ['done', 'timeout'] })).verdict).toBe('partial');
  });

  it('names every doubt with its penalty, flaky tests and mtime evidence included', () => {
    const f = facts({
      verification: verification({ flaky: ['t'] }),
      changes: changes(2, { source: 'mtime', snapshot_truncated: true }),
      largeFilesByStat: true,
    });
    expect(codes(f)).toEqual(['flaky_tests', 'diff_truncated', 'mtime_evidence', 'large_files_by_stat']);
    expect(computeProof(f)).toMatchObject({ verdict: 'proved', confidence: 0.65 });
  });

  it('a cancelled job is never proved', () => {
    expect(computeProof(facts({ cancelled: true }))).toMatchObject({ verdict: 'partial', confidence: 0.5 });
  });
});

describe('the verdict line (spec 01)', () => {
  const base = {
    status: 'partial' as const,
    error: null,
    workerStatuses: ['done', 'timeout'] as ('done' | 'timeout')[],
    filesChanged: 3,
    verification: verification({ ok: false, blocking: true, summary: '1 failed, 41 passed' }),
    fixRoundsRun: 2,
    converged: true,
    proof: computeProof(facts({ verification: verification({ ok: false, blocking: true }) })),
    claimedOnly: [],
    criteriaUnmet: ['docs/a.md'],
    reportedStates: ['w rate_limited'],
  };

  it('joins the parts in order with " · ", the proof first when it is not proved', () => {
    expect(buildVerdict(base)).toBe(
      'contradicted: the verification fails · 1/2 workers done (1 timeout) · 3 files changed on disk · verification FAILED (1 failed, 41 passed) · fix rounds converged after 2 · job criteria unmet: docs/a.md · reported (not killed): w rate_limited',
    );
  });

  it('a proved job keeps the proof in its place of spec 01', () => {
    const proved = {
      ...base,
      workerStatuses: ['done' as const],
      proof: { verdict: 'proved' as const, confidence: 1, shown: [], uncertainty: [] },
      criteriaUnmet: [],
      reportedStates: [],
    };
    expect(
      buildVerdict({
        ...proved,
        verification: {
          ...(base.verification as NonNullable<typeof base.verification>),
          ok: true,
          blocking: false,
          summary: '42 passed',
        },
      }),
    ).toBe(
      '1/1 workers done · 3 files changed on disk · verification passed (42 passed) · fix rounds converged after 2 · proved 1.00',
    );
  });

  it('names refused tools, and a verification that could not start before anything else', () => {
    const refused = buildVerdict({ ...base, refusals: ['w → run_command ×2'] });
    expect(refused).toContain(' · refused, not failed: w → run_command ×2');
    const v = {
      ...(base.verification as NonNullable<typeof base.verification>),
      ok: null,
      inconclusive: true,
      blocking: false,
      could_not_start: true as const,
      summary: 'the command could not run (exit 127): sh: 1: pytset: not found',
    };
    const line = buildVerdict({
      ...base,
      verification: v,
      proof: { verdict: 'unproved', confidence: 0.5, shown: [], uncertainty: [] },
    });
    expect(line).toMatch(
      /^verification could not start: the command could not run \(exit 127\): sh: 1: pytset: not found · unproved: nothing could show it · /,
    );
    expect(line).not.toContain('verification inconclusive');
  });

  it('starts with cancelled or error, and is cut at 400 characters with …', () => {
    expect(buildVerdict({ ...base, status: 'cancelled' })).toMatch(
      /^cancelled · contradicted: the verification fails · 1\/2 workers done/,
    );
    expect(buildVerdict({ ...base, status: 'error', error: 'no worker started' })).toMatch(
      /^error: no worker started · /,
    );
    const long = buildVerdict({ ...base, criteriaUnmet: ['x'.repeat(500)] });
    expect(long).toHaveLength(400);
    expect(long.endsWith('…')).toBe(true);
  });
});
