// spec 07 "Objectives ordering": the engine's side — the objectives file read at the checkpoint,
// the impact order of a sequential job, and the evidence each named objective gets when the job ends.
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import {
  OBJECTIVES_FILE,
  objectiveEvidenceOf,
  parseObjectives,
  scoreObjectives,
  taskImpacts,
  type ObjectivesNote,
} from '../../domain/objectives.js';
import { taskOrderOf } from '../../domain/phase-order.js';
import type { TaskSpec } from '../../domain/request.js';
import type { Snapshot } from '../../domain/snapshot.js';
import type { JobStatus } from '../../domain/status.js';
import { readCheckpointFile } from '../../evidence/checkpoint-file.js';
import type { WorkspaceHints } from '../../verification/workspace-hints.js';
import { epochS } from '../clock.js';
import type { JobContext } from '../job-context.js';
import { readBounded } from '../../platform/files/bounded-read.js';

/** An objectives file bigger than this is ignored with a warning: it is a list of goals, not data. */
const MAX_BYTES = 1 << 20;

/** The workspace's objectives file: its hint `objectives` (`.gaffer/workspace.json` as committed: readCommittedHints), else `.gaffer/objectives.json`. */
export function objectivesFileOf(hints: WorkspaceHints): string {
  return hints.objectives ?? OBJECTIVES_FILE;
}

/**
 * Reads the objectives file as the checkpoint `pre` holds it (null: as the workspace holds it now,
 * before any worker runs), notes on the job what it says, and in a sequential job orders the tasks
 * that name objectives by impact within their phases, recorded as the job's `task_order`. Returns
 * `tasks` in the order they are to run. A missing file changes nothing; a bad one is a warning on
 * the job (its `objectives.warnings` and a phase event), never a failure.
 */
export async function applyObjectives(
  ctx: JobContext,
  pre: Snapshot | null,
  file: string,
  tasks: TaskSpec[],
): Promise<TaskSpec[]> {
  const warnings: string[] = [];
  let text: string | null;
  try {
    text = await readObjectivesText(ctx.spec.workspace, pre, file);
  } catch (err) {
    text = null;
    warnings.push(`${file}: ${err instanceof Error ? err.message : String(err)}: ignored`);
  }
  let note: ObjectivesNote = { file, named: [], warnings };
  let order: ReturnType<typeof taskOrderOf> = null;
  if (text !== null) {
    try {
      const reading = parseObjectives(text, file);
      warnings.push(...reading.warnings);
      const scores = scoreObjectives(reading.objectives, Date.now());
      const { impacts, unknown } = taskImpacts(
        ctx.spec.tasks.map((t) => ({ name: t.name, text: t.instruction })),
        scores,
      );
      for (const u of unknown)
        warnings.push(
          `task ${u.task} names ${u.id}, which ${file} does not declare: not ordered by it, no evidence kept for it`,
        );
      const ids = [...new Set([...impacts.values()].flatMap((i) => i.objectives))];
      const titles = new Map(reading.objectives.map((o) => [o.id, o.title]));
      note = {
        file,
        named: ids.map((id) => ({ id, title: titles.get(id) ?? '', impact: scores.get(id)?.impact ?? 0 })),
        warnings,
      };
      // spec 07: a parallel job is never reordered; a worktree job's tasks run as their gates class them (spec 06)
      const ordered =
        ctx.spec.parallel || ctx.spec.isolation === 'worktree' ? null : taskOrderOf(ctx.spec.tasks, false, impacts);
      order = ordered !== null && ordered.by !== 'phase' ? ordered : null;
    } catch (err) {
      // the graph library's own failure (a PageRank that does not converge): the job runs as written
      warnings.push(
        `${file}: impact not computed (${err instanceof Error ? err.message : String(err)}): tasks run as written`,
      );
    }
  }
  if (text === null && warnings.length === 0) return tasks;
  ctx.update({ spec: { ...ctx.spec, objectives: note, ...(order ? { task_order: order } : {}) } });
  if (warnings.length > 0)
    ctx.phase(
      `objectives: ${warnings[0] ?? ''}${warnings.length > 1 ? ` (+${warnings.length - 1} more in the job's objectives.warnings)` : ''}`.slice(
        0,
        400,
      ),
    );
  if (order === null) return tasks;
  const at = new Map(order.to.map((name, i) => [name, i]));
  return [...tasks].sort((a, b) => (at.get(a.name) ?? 0) - (at.get(b.name) ?? 0));
}

/**
 * The file's text as the checkpoint recorded it. An mtime checkpoint (or a file over its size cap)
 * holds no content: then the file is read from the workspace, which is the checkpoint's state as no
 * worker has started yet. Null: there is no such file.
 */
async function readObjectivesText(workspace: string, pre: Snapshot | null, file: string): Promise<string | null> {
  const recorded = pre ? await readCheckpointFile(pre, file) : ({ found: 'stat-only' } as const);
  if (recorded.found === 'absent') return null;
  if (recorded.found === 'content') {
    // a link could point outside the workspace: its target is never read
    if (recorded.mode === '120000') throw new Error('is a symlink; only a regular file is read');
    if (recorded.content.length > MAX_BYTES) throw new Error(`is over ${MAX_BYTES} bytes`);
    return recorded.content.toString('utf8');
  }
  const path = join(workspace, file);
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return null;
  if (!stat.isFile()) throw new Error('is not a regular file; only a regular file is read');
  if (stat.size > MAX_BYTES) throw new Error(`is over ${MAX_BYTES} bytes`);
  const read = readBounded(path, { maxBytes: MAX_BYTES, within: workspace });
  if (!read.ok) throw new Error(read.why);
  return read.bytes.toString('utf8');
}

/**
 * Keeps the job's evidence on each objective it named (spec 07): its status, what it changed, and
 * confidence 0.6 when `done`, 0.4 otherwise. A store that cannot take it is said on the job.
 */
export function recordObjectiveEvidence(ctx: JobContext, status: JobStatus, filesChanged: readonly string[]): void {
  const named = ctx.spec.objectives?.named ?? [];
  if (named.length === 0) return;
  const rows = objectiveEvidenceOf(
    named.map((n) => n.id),
    { id: ctx.id, workspace: ctx.spec.workspace, status, filesChanged, ts: epochS() },
  );
  try {
    ctx.services.store.recordObjectiveEvidence(rows, ctx.job.owner);
  } catch (err) {
    ctx.phase(`objective evidence not written: ${err instanceof Error ? err.message : String(err)}`.slice(0, 400));
  }
}
