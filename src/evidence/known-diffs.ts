/** A change between two checkpoint commits' trees, as paths. */
export interface TreeDelta {
  added: string[];
  /** Content, mode or type changed (absent: none). */
  modified?: string[];
  deleted: string[];
}

/** Commit pairs remembered (the oldest forgotten first): a job asks for its pairs within seconds. */
const MAX_REMEMBERED = 1_024;
const remembered = new Map<string, TreeDelta>();

const keyOf = (gitDir: string, from: string, to: string): string => `${gitDir}\0${from}\0${to}`;

/**
 * Remembers what `to`'s tree changed against `from`'s in a shadow repository, when the checkpoint
 * that wrote `to` knows it without asking git: it hashed only paths its index did not hold and
 * removed indexed ones, so its tree is `from`'s plus those paths and minus these (index-update.ts),
 * or it built its tree itself from content it knows (known-index.ts). Commits never change, so the
 * pair's answer holds for as long as both exist: `diff-tree` is spared, not second-guessed.
 */
export function rememberTreeDiff(gitDir: string, from: string, to: string, delta: TreeDelta): void {
  if (from === to) return;
  remembered.set(keyOf(gitDir, from, to), delta);
  if (remembered.size > MAX_REMEMBERED) {
    const oldest = remembered.keys().next().value;
    if (oldest !== undefined) remembered.delete(oldest);
  }
}

/** The tree change `rememberTreeDiff` kept for this pair, or null: git is asked. */
export function recallTreeDiff(gitDir: string, from: string, to: string): TreeDelta | null {
  return remembered.get(keyOf(gitDir, from, to)) ?? null;
}
