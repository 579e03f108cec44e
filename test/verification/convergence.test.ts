import { describe, expect, it } from 'vitest';
import { compareArtifacts, normalizeArtifactText } from '../../src/verification/convergence.js';

describe('fix-round convergence', () => {
  it('normalizes timings, temp paths, pids and timestamps away', () => {
    const a = 'FAIL in 0.12s at /tmp/abc123/x.js pid 4242 2026-11-30T01:02:03Z duration_ms 212';
    const b = 'FAIL in 3.4s at /tmp/zz9/x.js pid 17 2026-11-30T09:09:09Z duration_ms 9';
    expect(normalizeArtifactText(a)).toBe(normalizeArtifactText(b));
  });

  it('the same artifact converges with high confidence; a different outcome does not', () => {
    expect(compareArtifacts('1 failed\nx', '1 failed\nx')).toMatchObject({
      converged: true,
      score: 1,
      confidence: 'high',
    });
    expect(compareArtifacts('1 failed\nx', '0 failed\ny').converged).toBe(false);
  });

  it('a line similarity of 0.95 or more converges with medium confidence', () => {
    const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`);
    const changed = [...lines.slice(0, 39), 'other'];
    expect(compareArtifacts(lines.join('\n'), changed.join('\n'))).toMatchObject({
      converged: true,
      confidence: 'medium',
    });
  });
});
