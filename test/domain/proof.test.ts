import { describe, expect, it } from 'vitest';
import { computeProof, type ProofFacts } from '../../src/domain/proof.js';
import type { VerificationJson } from '../../src/domain/result.js';
import type { ChangesJson } from '../../src/evidence/types.js';
import { buildVerdict } from '../../src/domain/verdict.js';

const changes = (count: number, extra: Partial<ChangesJson> = {}): ChangesJson => ({
  source: 'checkpoint', checkpoint: 'abc', count, added: [], modified: Array.from({ length: count }, (_, i) => `f${i}`), deleted: [],
  truncated: false, snapshot_truncated: false, skipped: [], verification_wrote: [], ...extra,
});
const verification = (extra: Partial<VerificationJson>): VerificationJson => ({
  mode: 'auto', ran: true, ok: true, inconclusive: false, kind: 'node', command: 'npm test', scope: 'all', exit_code: 0, timed_out: false,
  duration_s: 1, blocking: false, summary: '3 passed', failures: [], new_failures: [], pre_existing: [], flaky: [], output_tail: '', attempts: 1, ...extra,
});
const facts = (extra: Partial<ProofFacts> = {}): ProofFacts => ({
  changes: changes(1), verification: verification({}), claimedOnly: [], claimedCount: 0, workerStatuses: ['done'], expectsChanges: true,
  criteria: null, cancelled: false, largeFilesByStat: false, testsWeakened: false, ...extra,
});
const codes = (f: ProofFacts) => computeProof(f).uncertainty.map((u) => u.code);

describe('the proof (spec 03)', () => {
  it('proved: a conclusive pass, a non-empty diff, no doubts', () => {
    expect(computeProof(facts())).toEqual({ verdict: 'proved', confidence: 1, shown: ['verification passed: 3 passed', '1 file changed on disk'], uncertainty: [] });
  });

  it('contradicted: a blocking failure, a claimed file that did not change, or an unmet criterion', () => {
    expect(computeProof(facts({ verification: verification({ ok: false, blocking: true }) })).verdict).toBe('contradicted');
    expect(computeProof(facts({ claimedOnly: ['src/x.ts'], claimedCount: 1 })).verdict).toBe('contradicted');
    expect(computeProof(facts({ criteria: { complete: false, met: [], unmet: ['docs/x.md'], unchecked: [] } })).verdict).toBe('contradicted');
  });

  it('unproved: nothing ran that could show it', () => {
    expect(computeProof(facts({ verification: verification({ ran: false, ok: null, summary: 'off' }) }))).toMatchObject({ verdict: 'unproved', confidence: 0.5 });
    expect(computeProof(facts({ verification: verification({ ok: null, inconclusive: true }) }))).toMatchObject({ verdict: 'unproved', confidence: 0.6 });
  });

  it('partial: pre-existing failures only, nothing changed, weakened tests, unchecked criteria, a worker not done', () => {
    expect(computeProof(facts({ verification: verification({ ok: false, pre_existing_only: true, pre_existing: ['a'] }) }))).toMatchObject({ verdict: 'partial', confidence: 0.85 });
    expect(computeProof(facts({ changes: changes(0) })).verdict).toBe('partial');
    expect(computeProof(facts({ changes: changes(0), expectsChanges: false })).verdict).toBe('proved');
    expect(computeProof(facts({ testsWeakened: true })).verdict).toBe('partial');
    expect(computeProof(facts({ criteria: { complete: false, met: [], unmet: [], unchecked: ['a', 'b', 'c', 'd'] } }))).toMatchObject({ verdict: 'partial', confidence: 0.7 });
    expect(computeProof(facts({ workerStatuses: ['done', 'timeout'] })).verdict).toBe('partial');
  });

  it('names every doubt with its penalty, flaky tests and mtime evidence included', () => {
    const f = facts({ verification: verification({ flaky: ['t'] }), changes: changes(2, { source: 'mtime', snapshot_truncated: true }), largeFilesByStat: true });
    expect(codes(f)).toEqual(['flaky_tests', 'diff_truncated', 'mtime_evidence', 'large_files_by_stat']);
    expect(computeProof(f)).toMatchObject({ verdict: 'proved', confidence: 0.65 });
  });

  it('a cancelled job is never proved', () => {
    expect(computeProof(facts({ cancelled: true }))).toMatchObject({ verdict: 'partial', confidence: 0.5 });
  });
});

describe('the verdict line (spec 01)', () => {
  const base = {
    status: 'partial' as const, error: null, workerStatuses: ['done', 'timeout'] as ('done' | 'timeout')[], filesChanged: 3,
    verification: verification({ ok: false, blocking: true, summary: '1 failed, 41 passed' }), fixRoundsRun: 2, converged: true,
    proof: computeProof(facts({ verification: verification({ ok: false, blocking: true }) })), claimedOnly: [], criteriaUnmet: ['docs/a.md'], reportedStates: ['w rate_limited'],
  };

  it('joins the parts in order with " · "', () => {
    expect(buildVerdict(base)).toBe(
      '1/2 workers done (1 timeout) · 3 files changed on disk · verification FAILED (1 failed, 41 passed) · fix rounds converged after 2 · contradicted: the verification fails · job criteria unmet: docs/a.md · reported (not killed): w rate_limited',
    );
  });

  it('starts with cancelled or error, and is cut at 400 characters with …', () => {
    expect(buildVerdict({ ...base, status: 'cancelled' })).toMatch(/^cancelled · 1\/2 workers done/);
    expect(buildVerdict({ ...base, status: 'error', error: 'no worker started' })).toMatch(/^error: no worker started · /);
    const long = buildVerdict({ ...base, criteriaUnmet: ['x'.repeat(500)] });
    expect(long).toHaveLength(400);
    expect(long.endsWith('…')).toBe(true);
  });
});
