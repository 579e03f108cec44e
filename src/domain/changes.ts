// The changes a job reports (spec 03): plain data the proof, the result and the doors read, made by evidence/.

/** `git status`-ish facts about the user's own repository (spec 03 `changes.git`). */
export interface GitFacts {
  repo: true;
  dirty_count: number;
  shortstat: string;
}

/** The `changes` JSON of spec 03. */
export interface ChangesJson {
  source: 'checkpoint' | 'mtime';
  checkpoint: string;
  count: number;
  added: string[];
  modified: string[];
  deleted: string[];
  truncated: boolean;
  snapshot_truncated: boolean;
  skipped: string[];
  verification_wrote: string[];
  git?: GitFacts;
  /** What changed where the evidence does not look; absent when nothing did. */
  outside_evidence?: OutsideEvidenceJson;
  /**
   * Files among the changes that ignore rules the workers wrote hid (a `.gitignore` line,
   * `.git/info/exclude`, core.excludesFile): the checkpoint's rules list them, so they are evidence
   * all the same (issue 32). Absent when none.
   */
  hidden_by_ignore?: string[];
}

/**
 * `changes.outside_evidence`: writes into places the checkpoint excludes that matter anyway —
 * what runs on the next commit or editor open, and the excluded folders (docs/outside-evidence.md).
 */
export interface OutsideEvidenceJson {
  /**
   * The repository's hooks, config and info files that changed, workspace-relative with what
   * happened: `.git/hooks/pre-commit (added, executable)`, `.git/config (modified: core.hookspath)`,
   * `../.git/info/attributes (added)` (a workspace inside a larger repository). At most 10.
   */
  git?: string[];
  /**
   * Issue 32: git config and attributes files where the workers set what makes git run a program,
   * each with its keys: `.git/config: filter.evil.clean, diff.evil.textconv`, `.git/info/attributes:
   * filter=evil`. gaffer's own git never runs them; the user's next git command would. At most 10.
   */
  git_code?: string[];
  /** Editor configs that changed: `.vscode/tasks.json (added)`, `.idea/workspace.xml (modified)`. At most 10. */
  editor?: string[];
  /**
   * Files of the packages the tests run through (the test framework, what it depends on, `node_modules/.bin`,
   * a virtualenv's `bin/` and pytest), compared by content: `node_modules/mocha/lib/runner.js (modified)`. At most 10.
   */
  dependencies?: string[];
  /** Files changed per excluded folder (`build`, `node_modules`, `web/dist`), exact; at most 10 folders. */
  excluded?: Record<string, ExcludedFolderCounts>;
  /** Everything the workers changed here: named entries plus the excluded folders' counts (exact). */
  count: number;
  /** A list was capped (the count stays exact). */
  truncated?: true;
  /** Entries only the verification changed (not blamed on the workers, not in `count`). */
  verification_wrote?: number;
  /** The records could not be compared: why (the rest of this object then says nothing). */
  unavailable?: string;
}

/** What changed in one excluded folder. */
export interface ExcludedFolderCounts {
  added: number;
  modified: number;
  deleted: number;
  /**
   * The folder is too big to compare file by file: its first files (in path order) were, the rest
   * only by its top entries (an entry added, removed or renamed directly in one shows; an in-place
   * edit deeper down does not), and those entries count here too.
   */
  partial?: true;
}
