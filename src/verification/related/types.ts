// spec 03 "Scope": `verify_scope: "related"` runs the tests related to the changed files, or says why it ran
// everything. These are the answer's shapes, shared by the dispatch and every framework's selection.

/** What related scope runs instead of the full command. */
export interface RelatedSelection {
  /** The command to run instead of the full one. */
  command: string;
  /** Test files selected (workspace-relative, sorted); for vitest/jest gaffer's own import-graph reading of what the framework will pick. */
  relatedFiles: string[];
  /** Changed files no test imports whose package's tests were added to the run; absent when none widened it. */
  widened?: string[];
}

/** Why related scope fell back to everything, or the selection. */
export type RelatedResult = { scope: 'related'; selection: RelatedSelection } | { scope: 'all'; reason: string };
