import type { VerificationJson } from '../domain/result.js';

/** Convergence of fix rounds: the same artifact twice means more rounds will not help (spec 03). */
export const SIMILARITY_THRESHOLD = 0.95;

/** Normalizes what makes two identical runs look different: timings, temp paths, pids, timestamps. */
export function normalizeArtifactText(text: string): string {
  return text
    .replace(/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g, '<ts>')
    .replace(/\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b/g, '<time>')
    .replace(/(?:\/tmp|\/var\/folders|\/private\/var)\/[^\s'":]+/g, '<tmp>')
    .replace(/\b(?:in|took|after)\s+\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds|m)\b/gi, '<dur>')
    .replace(/\b\d+(?:\.\d+)?\s*(?:ms|s)\b/g, '<dur>')
    .replace(/\b(?:duration_ms|duration|time)[=: ]+\d+(?:\.\d+)?/gi, '<dur>')
    .replace(/\b(?:pid|PID)[=: ]+\d+/g, 'pid <n>')
    .replace(/[ \t]+$/gm, '');
}

/** A fix round's artifact: verification summary + failures + output tail + changed paths. */
export function verificationArtifact(v: VerificationJson, changedPaths: string[]): string {
  return normalizeArtifactText([v.summary, ...v.failures, v.output_tail, ...changedPaths].join('\n'));
}

/** Compares two artifacts: equal after normalization, or a line similarity ≥ 0.95. */
export function compareArtifacts(
  a: string,
  b: string,
): { converged: boolean; score: number; confidence: 'high' | 'medium'; reason: string } {
  if (a === b)
    return {
      converged: true,
      score: 1,
      confidence: 'high',
      reason: 'the round left the same failures, output and changes as the one before',
    };
  const score = lineSimilarity(a, b);
  const converged = score >= SIMILARITY_THRESHOLD;
  return {
    converged,
    score: Math.round(score * 1000) / 1000,
    confidence: 'medium',
    reason: converged
      ? `the round left nearly the same artifact (line similarity ${score.toFixed(2)})`
      : 'the round changed the outcome',
  };
}

/** Dice coefficient over the multisets of lines. */
function lineSimilarity(a: string, b: string): number {
  const la = a.split('\n');
  const lb = b.split('\n');
  const counts = new Map<string, number>();
  for (const l of la) counts.set(l, (counts.get(l) ?? 0) + 1);
  let common = 0;
  for (const l of lb) {
    const n = counts.get(l) ?? 0;
    if (n > 0) {
      common++;
      counts.set(l, n - 1);
    }
  }
  return la.length + lb.length === 0 ? 1 : (2 * common) / (la.length + lb.length);
}
