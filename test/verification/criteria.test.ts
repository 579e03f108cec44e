import { describe, expect, it } from 'vitest';
import type { VerificationJson } from '../../src/domain/result.js';
import { checkCriteria, pathsIn } from '../../src/verification/criteria.js';

const verification = (ok: boolean | null) => ({ ok, inconclusive: ok === null }) as VerificationJson;

describe('job criteria, checked against what the job observed', () => {
  it('finds paths in a criterion', () => {
    expect(pathsIn('src/api.ts changes')).toEqual(['src/api.ts']);
    expect(pathsIn('update docs/api.md and README.md')).toEqual(['docs/api.md', 'README.md']);
    expect(pathsIn('the parser handles dates')).toEqual([]);
  });

  it('meets a path only when it changed on disk, tests only when the verification passed, and leaves the rest unchecked', () => {
    const check = checkCriteria(['src/api.ts changes', 'docs/api.md updated', 'tests pass', 'the code is clean'], ['src/api.ts', 'src/other.ts'], verification(true));
    expect(check).toEqual({ complete: false, met: ['src/api.ts changes', 'tests pass'], unmet: ['docs/api.md updated'], unchecked: ['the code is clean'] });
  });

  it('a failed verification makes "tests pass" unmet; an inconclusive one leaves it unchecked', () => {
    expect(checkCriteria(['all tests pass'], [], verification(false)).unmet).toEqual(['all tests pass']);
    expect(checkCriteria(['all tests pass'], [], verification(null)).unchecked).toEqual(['all tests pass']);
    expect(checkCriteria(['all tests pass'], [], null).unchecked).toEqual(['all tests pass']);
  });

  it('a path inside a changed folder meets a folder criterion', () => {
    expect(checkCriteria(['docs/ updated'], ['docs/guide.md'], null).met).toEqual(['docs/ updated']);
  });
});
