import type { CriteriaCheckJson, VerificationJson } from '../domain/result.js';

// a path: a file with an extension, a folder ending in "/", or three or more segments — so that
// "and/or" or "input/output" in prose is not mistaken for a path (it stays unchecked, never unmet)
const PATH_TOKEN = /(?:^|[\s"'`(])((?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,8}|(?:[\w.-]+\/)+|(?:[\w.-]+\/){2,}[\w.-]+)(?=$|[\s"'`),;:])/g;
const TESTS_PASS = /\b(?:tests?|suite|verification|specs?)\b[^.]*\b(?:pass|passes|passing|green|succeed)/i;

/** Paths a criterion names (`src/api.ts`, `docs/`). */
export function pathsIn(text: string): string[] {
  return [...text.matchAll(PATH_TOKEN)].map((m) => (m[1] as string).replace(/^\.\//, '').replace(/\/$/, ''));
}

/**
 * Checks job criteria against what the job observed (spec 03 "Job criteria"), never a worker's
 * words: a path is met only if it changed on disk; "tests pass" only if the verification passed;
 * anything else is `unchecked`.
 */
export function checkCriteria(criteria: string[], changedPaths: string[], v: VerificationJson | null): CriteriaCheckJson {
  const check: CriteriaCheckJson = { complete: false, met: [], unmet: [], unchecked: [] };
  const changed = (p: string) => changedPaths.some((c) => c === p || c.endsWith(`/${p}`) || c.startsWith(`${p}/`));
  for (const criterion of criteria) {
    const paths = pathsIn(criterion);
    if (paths.length > 0) {
      (paths.every(changed) ? check.met : check.unmet).push(criterion);
    } else if (TESTS_PASS.test(criterion)) {
      if (v?.ok === true) check.met.push(criterion);
      else if (v?.ok === false && !v.inconclusive) check.unmet.push(criterion);
      else check.unchecked.push(criterion);
    } else {
      check.unchecked.push(criterion);
    }
  }
  check.complete = check.unmet.length === 0 && check.unchecked.length === 0;
  return check;
}
