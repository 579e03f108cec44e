import { sortPaths } from './paths.js';
import type { ChangeSet } from './types.js';

/** How a claim or a changed path is compared: slashes unified, no `./`, no empty segments. */
function segmentsOf(raw: string, caseInsensitive: boolean): string[] {
  const text = caseInsensitive ? raw.toLowerCase() : raw;
  return text
    .trim()
    .replace(/\\/g, '/')
    .split('/')
    .filter((seg) => seg !== '' && seg !== '.');
}

/** Whether `short` equals the last segments of `long`, whole segments only. */
function isSegmentSuffix(short: string[], long: string[]): boolean {
  if (short.length === 0 || short.length > long.length) return false;
  const offset = long.length - short.length;
  for (let i = 0; i < short.length; i++) if (short[i] !== long[offset + i]) return false;
  return true;
}

/**
 * Claims a worker made that the observed changes do not back (spec 03 "Claims"): compared
 * normalized, a claim matching a changed path when one is a whole-segment suffix of the other
 * ("api.ts" matches "src/api.ts", "i.ts" does not; an absolute claim matches the relative path
 * it ends with),
 * against the full change sets. Returns the normalized claims, sorted and unique.
 */
export function findClaimedOnly(
  claims: string[],
  changed: ChangeSet,
  opts: { caseInsensitive?: boolean } = {},
): string[] {
  const ci = opts.caseInsensitive === true;
  const observed = [...changed.added, ...changed.modified, ...changed.deleted].map((p) => segmentsOf(p, ci));
  const byLastSegment = new Map<string, string[][]>();
  for (const segs of observed) {
    const last = segs[segs.length - 1];
    if (last === undefined) continue;
    const list = byLastSegment.get(last) ?? [];
    list.push(segs);
    byLastSegment.set(last, list);
  }
  const unbacked = new Set<string>();
  for (const claim of claims) {
    const segs = segmentsOf(claim, ci);
    const last = segs[segs.length - 1];
    if (last === undefined) continue;
    const candidates = byLastSegment.get(last) ?? [];
    // an absolute claim carries the workspace's own path in front of the relative one
    const absolute = /^([A-Za-z]:)?[\\/]/.test(claim.trim());
    const backed = candidates.some((obs) => isSegmentSuffix(segs, obs) || (absolute && isSegmentSuffix(obs, segs)));
    if (!backed) unbacked.add(segmentsOf(claim, false).join('/'));
  }
  return sortPaths(unbacked);
}
