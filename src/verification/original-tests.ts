import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Snapshot } from '../domain/snapshot.js';
import { exportCheckpoint, extractFromSnapshot, whyNoBaseline } from './baseline.js';
import type { HarnessChange } from './harness.js';
import type { OriginalTestsRun, RunReading } from './judge.js';
import type { SuiteRun } from './run-suite.js';

// spec 03 "the checkpoint's tests judge": when the workers changed tests or the harness, the checkpoint's
// versions of those files run against the new code. The copy is made like the baseline's: the tree the
// workers left, with every changed test and harness file put back as it was at the checkpoint (files the
// workers added removed), outside the workspace, dependency folders linked.

/** What the run needs. */
export interface OriginalTestsInput {
  pre: Snapshot | null;
  /** The snapshot of the tree the workers left (the code under test). */
  post: Snapshot;
  changed: HarnessChange[];
  /** Where the copy is made (removed afterwards). */
  dir: string;
  signal: AbortSignal;
  /** The command to run in the copy (decided from the copy when scope is related). */
  commandIn: (cwd: string) => Promise<string>;
  run: (cwd: string, command: string) => Promise<SuiteRun>;
  readingOf: (run: SuiteRun) => RunReading;
  /** Up to 3 targeted reruns of failing ids in the copy: the ids that passed by their own id. */
  flakyIn: (cwd: string, run: SuiteRun, candidates: string[]) => Promise<string[]>;
}

/** Runs the checkpoint's tests and harness against the tree the workers left. */
export async function runOriginalTests(input: OriginalTestsInput): Promise<OriginalTestsRun> {
  const changed = input.changed;
  const why =
    whyNoBaseline(input.pre) ??
    (input.post.source !== 'checkpoint' || !input.post.gitDir
      ? 'the tree the workers left was not recorded by content'
      : null);
  if (why !== null || input.pre === null) return { ran: false, why: why ?? 'no checkpoint', changed };
  const ws = join(input.dir, 'ws');
  try {
    await exportCheckpoint(input.post, ws);
    for (const c of changed) if (c.change === 'added') rmSync(join(ws, c.path), { recursive: true, force: true });
    const restore = changed.filter((c) => c.change !== 'added').map((c) => c.path);
    if (restore.length > 0) await extractFromSnapshot(input.pre, ws, restore);
    const command = await input.commandIn(ws);
    const run = await input.run(ws, command);
    const reading = input.readingOf(run);
    const candidates = reading.ok === false ? reading.failures.filter((id) => !id.startsWith('<')) : [];
    const flaky = candidates.length > 0 && !input.signal.aborted ? await input.flakyIn(ws, run, candidates) : [];
    return { ran: true, command, run, reading, flaky, changed };
  } catch (error) {
    return {
      ran: false,
      why: `the copy with the checkpoint's tests could not be made: ${error instanceof Error ? error.message : String(error)}`,
      changed,
    };
  } finally {
    rmSync(input.dir, { recursive: true, force: true });
  }
}
