import type { z } from 'zod';

/** Levenshtein distance between two strings (insertions, deletions and substitutions cost 1). */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * The known key `key` is most likely a typo of (`verfy` → `verify`, `Workspace` → `workspace`), or
 * null when none is near enough: at most a third of the key's letters off (one for short keys).
 */
export function nearestKey(key: string, known: readonly string[]): string | null {
  const lower = key.toLowerCase();
  const most = Math.max(1, Math.floor(key.length / 3));
  let best: { key: string; distance: number } | null = null;
  for (const candidate of known) {
    if (candidate === key) continue;
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance <= most && distance < key.length && (best === null || distance < best.distance))
      best = { key: candidate, distance };
  }
  return best?.key ?? null;
}

/**
 * `did you mean "verify"?` for keys that look like typos of known ones (each named when there are
 * several: `did you mean "verify" for "verfy", "tasks" for "taks"?`); '' when none does.
 */
export function suggestKeys(keys: readonly string[], known: readonly string[]): string {
  const near = keys.flatMap((key) => {
    const match = nearestKey(key, known);
    return match === null ? [] : [{ key, match }];
  });
  if (near.length === 0) return '';
  if (keys.length === 1) return `did you mean "${near[0]?.match}"?`;
  return `did you mean ${near.map((n) => `"${n.match}" for "${n.key}"`).join(', ')}?`;
}

/**
 * The keys an object schema inside `schema` accepts at `path` (the path of a zod issue: object
 * keys and array indices), looking through optional, nullable, default, preprocess and union
 * wrappers; empty when the path leads to no object.
 */
export function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let nodes: ZodNode[] = [schema as unknown as ZodNode];
  for (const step of path) {
    nodes = nodes.flatMap(unwrap).flatMap((node) => {
      const def = node._zod.def;
      if (def.type === 'object' && typeof step === 'string' && def.shape?.[step]) return [def.shape[step]];
      if (def.type === 'array' && typeof step === 'number' && def.element) return [def.element];
      if (def.type === 'record' && def.valueType) return [def.valueType];
      return [];
    });
  }
  return [
    ...new Set(
      nodes
        .flatMap(unwrap)
        .flatMap((node) => (node._zod.def.type === 'object' ? Object.keys(node._zod.def.shape ?? {}) : [])),
    ),
  ];
}

/** The part of a zod schema's internals the walk reads. */
interface ZodNode {
  _zod: {
    def: {
      type: string;
      shape?: Record<string, ZodNode>;
      element?: ZodNode;
      valueType?: ZodNode;
      innerType?: ZodNode;
      in?: ZodNode;
      out?: ZodNode;
      options?: ZodNode[];
    };
  };
}

/** The schemas a wrapper stands for (itself when it is not one). */
function unwrap(node: ZodNode): ZodNode[] {
  const def = node._zod.def;
  if (def.innerType) return unwrap(def.innerType);
  if (def.type === 'pipe') return [...(def.in ? unwrap(def.in) : []), ...(def.out ? unwrap(def.out) : [])];
  if (def.type === 'union' && def.options) return def.options.flatMap(unwrap);
  return [node];
}
