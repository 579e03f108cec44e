// spec 07 "Objectives ordering": a workspace's objectives, their impact over the dependency graph,
// the order it gives a sequential job's tasks, and the evidence a job leaves each objective it named.
import { DirectedGraph } from 'graphology';
import { betweenness, pagerank } from 'graphology-metrics/centrality/index.js';
import type { JobStatus } from './status.js';

/** The objectives file, relative to the workspace, when the workspace hint `objectives` names none. */
export const OBJECTIVES_FILE = '.gaffer/objectives.json';

/** One objective as read from the file (fields the file got wrong are at their defaults, with a warning). */
export interface Objective {
  /** `OBJ-<n>`. */
  id: string;
  /** What it is, in words ('' when the file gave none). */
  title: string;
  /** 1 (most urgent) … 5 (least); 3 when the file gave none. */
  priority: number;
  /** Ids of the objectives this one cannot be finished before (each known in the file). */
  dependsOn: string[];
  /** When it was last worked on (ms since the epoch); null when the file gave no time. */
  lastTouchedMs: number | null;
}

/** The objectives a file holds, and why anything in it was ignored or defaulted. */
export interface ObjectivesReading {
  objectives: Objective[];
  warnings: string[];
}

/** An objective's impact and the normalized (0..1) parts it is weighed from. */
export interface ObjectiveScore {
  id: string;
  /** The weighed sum, rounded to 3 decimals (ties are judged on it). */
  impact: number;
  pagerank: number;
  betweenness: number;
  blockerRatio: number;
  staleness: number;
  priority: number;
}

/** What a task's text names: the known objectives, and the highest impact among them (the task's). */
export interface TaskImpact {
  objectives: string[];
  score: number;
}

/** What a job read of its workspace's objectives at its checkpoint (the answer's `objectives`). */
export interface ObjectivesNote {
  /** The objectives file, relative to the workspace. */
  file: string;
  /** The objectives the job's tasks name that the file declares, with their impact: each gets an evidence record when the job ends. */
  named: { id: string; title: string; impact: number }[];
  /** What in the file was ignored or defaulted, and ids the tasks name that it does not declare. */
  warnings: string[];
}

/** A job's mark on an objective it named (spec 07), kept in the store past the job's own retention. */
export interface ObjectiveEvidence {
  /** `OBJ-<n>`. */
  objective: string;
  job_id: string;
  /** The workspace whose objectives file declared it. */
  workspace: string;
  /** The job's final status. */
  status: JobStatus;
  /** What the job changed on disk (in a shared workspace the changes cannot be told apart by task). */
  files_changed: string[];
  /** 0.6 when the job ended `done`, else 0.4. */
  confidence: number;
  /** When the job settled (epoch s). */
  ts: number;
}

/** The weights of spec 07's impact score; each part is normalized to 0..1 first. */
export const IMPACT_WEIGHTS = {
  pagerank: 0.3,
  betweenness: 0.3,
  blockerRatio: 0.2,
  staleness: 0.1,
  priority: 0.1,
} as const;

/** An objective untouched this long (or longer) is fully stale. */
export const STALE_AFTER_MS = 30 * 24 * 3_600_000;

const ID = /^OBJ-[0-9]+$/;
const NAMED = /\bOBJ-[0-9]+\b/g;
const PRIORITY = { min: 1, max: 5, unset: 3 } as const;
const LIMITS = { objectives: 1_000, title: 200, warnings: 20 } as const;
const KEYS = ['id', 'title', 'priority', 'depends_on', 'last_touched'];

/**
 * Reads an objectives file's text: `{"objectives": [{"id": "OBJ-1", "title", "priority",
 * "depends_on", "last_touched"}, …]}` (a bare array too). Never throws: what is wrong is a warning
 * naming the field, the value and the fix; an objective with a bad id is skipped, a bad field
 * falls back to its default, a dependency on an unknown objective is dropped.
 */
export function parseObjectives(text: string, file = OBJECTIVES_FILE): ObjectivesReading {
  const warnings: string[] = [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return {
      objectives: [],
      warnings: [
        `${file} is not valid JSON (${err instanceof Error ? err.message : String(err)}): ignored — fix the JSON`,
      ],
    };
  }
  const list = Array.isArray(raw) ? raw : isRecord(raw) ? raw.objectives : undefined;
  if (!Array.isArray(list)) {
    return {
      objectives: [],
      warnings: [
        `${file} must hold {"objectives": [...]}, got ${show(raw)}: ignored — put the objectives in an "objectives" array`,
      ],
    };
  }
  if (list.length > LIMITS.objectives)
    warnings.push(
      `${file}: ${list.length} objectives, only the first ${LIMITS.objectives} are read — split or prune the file`,
    );

  const found: { objective: Objective; depends: unknown; at: string }[] = [];
  const seen = new Map<string, number>();
  for (const [i, item] of (list as unknown[]).slice(0, LIMITS.objectives).entries()) {
    const at = `${file}: objectives[${i}]`;
    const id = idOf(item, at, seen, warnings);
    if (id === null || !isRecord(item)) continue;
    seen.set(id, i);
    for (const key of Object.keys(item))
      if (!KEYS.includes(key)) warnings.push(`${at}.${key} ignored — an objective has ${KEYS.join(', ')}`);
    const objective: Objective = {
      id,
      title: titleOf(item.title, at, warnings),
      priority: priorityOf(item.priority, at, warnings),
      dependsOn: [],
      lastTouchedMs: timeOf(item.last_touched, at, warnings),
    };
    found.push({ objective, depends: item.depends_on, at });
  }
  // dependencies last: one may name an objective further down the file
  for (const { objective, depends, at } of found)
    objective.dependsOn = dependsOf(depends, objective.id, seen, at, warnings);

  const shown =
    warnings.length > LIMITS.warnings
      ? [...warnings.slice(0, LIMITS.warnings), `… and ${warnings.length - LIMITS.warnings} more`]
      : warnings;
  return { objectives: found.map((f) => f.objective), warnings: shown };
}

/** The objective's id, or null (with a warning) when the item is skipped: not an object, a bad id, an id already used. */
function idOf(item: unknown, at: string, seen: ReadonlyMap<string, number>, warnings: string[]): string | null {
  if (!isRecord(item)) {
    warnings.push(`${at} must be an object like {"id": "OBJ-1", "title": "…"}, got ${show(item)}: skipped`);
    return null;
  }
  const id = item.id;
  if (typeof id !== 'string' || !ID.test(id)) {
    warnings.push(`${at}.id must be "OBJ-<n>" (like "OBJ-3"), got ${show(id)}: skipped — give it an OBJ-<n> id`);
    return null;
  }
  const first = seen.get(id);
  if (first !== undefined) {
    warnings.push(`${at}.id ${show(id)} is already objectives[${first}]'s: skipped — give each objective its own id`);
    return null;
  }
  return id;
}

function titleOf(value: unknown, at: string, warnings: string[]): string {
  if (typeof value === 'string' && value.trim() !== '' && value.length <= LIMITS.title) return value.trim();
  warnings.push(
    `${at}.title must be a non-empty string up to ${LIMITS.title} characters, got ${show(value)} — say what the objective is`,
  );
  return '';
}

function priorityOf(value: unknown, at: string, warnings: string[]): number {
  if (value === undefined) return PRIORITY.unset;
  if (typeof value === 'number' && Number.isInteger(value) && value >= PRIORITY.min && value <= PRIORITY.max)
    return value;
  warnings.push(
    `${at}.priority must be an integer ${PRIORITY.min}..${PRIORITY.max} (1 most urgent), got ${show(value)}: ${PRIORITY.unset} used`,
  );
  return PRIORITY.unset;
}

function timeOf(value: unknown, at: string, warnings: string[]): number | null {
  if (value === undefined || value === null) return null;
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isNaN(ms)) return ms;
  warnings.push(`${at}.last_touched must be an ISO 8601 time like "2025-01-31T12:00:00Z", got ${show(value)}: ignored`);
  return null;
}

function dependsOf(
  value: unknown,
  self: string,
  known: ReadonlyMap<string, number>,
  at: string,
  warnings: string[],
): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    warnings.push(`${at}.depends_on must be a list of ids like ["OBJ-2"], got ${show(value)}: ignored`);
    return [];
  }
  const out: string[] = [];
  value.forEach((dep: unknown, j) => {
    const where = `${at}.depends_on[${j}]`;
    if (typeof dep !== 'string' || !ID.test(dep))
      warnings.push(`${where} must be an "OBJ-<n>" id, got ${show(dep)}: dropped`);
    else if (dep === self) warnings.push(`${where}: ${self} cannot depend on itself: dropped`);
    else if (!known.has(dep))
      warnings.push(`${where}: ${dep} is not an objective in the file: dropped — add it or remove the dependency`);
    else if (!out.includes(dep)) out.push(dep);
  });
  return out;
}

/**
 * Each objective's impact (spec 07): PageRank 0.30 + betweenness 0.30 + blocker ratio 0.20 +
 * staleness 0.10 + priority 0.10, each part normalized to 0..1. The graph has an edge from an
 * objective to each it depends on, so importance flows to what others wait for; PageRank and
 * betweenness come from graphology-metrics. Normalizations:
 * - PageRank and betweenness: divided by the largest value in the file (the top objective is 1;
 *   betweenness is 0 for all when no objective lies between two others);
 * - blocker ratio: the objectives that depend on this one, directly or through others, over the
 *   other objectives in the file (n − 1); 0 in a file of one;
 * - staleness: time since `last_touched` over STALE_AFTER_MS (30 days), capped at 1; 0 when the
 *   file gives no time or the time is in the future (nothing says it is stale);
 * - priority: (5 − priority) / 4, so 1 → 1 and 5 → 0 (3, the default, → 0.5).
 */
export function scoreObjectives(objectives: readonly Objective[], nowMs: number): Map<string, ObjectiveScore> {
  const scores = new Map<string, ObjectiveScore>();
  if (objectives.length === 0) return scores;
  const graph = new DirectedGraph();
  for (const o of objectives) graph.addNode(o.id);
  for (const o of objectives) for (const dep of o.dependsOn) if (graph.hasNode(dep)) graph.mergeEdge(o.id, dep);
  const ranks = pagerank(graph, { getEdgeWeight: null });
  const between = betweenness(graph, { getEdgeWeight: null, normalized: false });
  const byMax = (values: Record<string, number>) => {
    const max = Math.max(...Object.values(values));
    return (id: string) => (max > 0 ? (values[id] ?? 0) / max : 0);
  };
  const rankOf = byMax(ranks);
  const betweenOf = byMax(between);
  const others = objectives.length - 1;
  for (const o of objectives) {
    const parts = {
      pagerank: rankOf(o.id),
      betweenness: betweenOf(o.id),
      blockerRatio: others > 0 ? dependentsOf(graph, o.id) / others : 0,
      staleness: o.lastTouchedMs === null ? 0 : Math.min(1, Math.max(0, nowMs - o.lastTouchedMs) / STALE_AFTER_MS),
      priority: (PRIORITY.max - o.priority) / (PRIORITY.max - PRIORITY.min),
    };
    const sum = (Object.keys(IMPACT_WEIGHTS) as (keyof typeof IMPACT_WEIGHTS)[]).reduce(
      (s, k) => s + IMPACT_WEIGHTS[k] * parts[k],
      0,
    );
    scores.set(o.id, { id: o.id, impact: Math.round(sum * 1_000) / 1_000, ...parts });
  }
  return scores;
}

/** How many objectives wait on `id`, directly or through others. */
function dependentsOf(graph: DirectedGraph, id: string): number {
  const reached = new Set<string>([id]);
  const queue = [id];
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    for (const dependent of graph.inNeighbors(next)) {
      if (reached.has(dependent)) continue;
      reached.add(dependent);
      queue.push(dependent);
    }
  }
  return reached.size - 1;
}

/** The `OBJ-<n>` ids a text names, in the order it first names them. */
export function objectivesNamedIn(text: string): string[] {
  return [...new Set(text.match(NAMED) ?? [])];
}

/**
 * What each task names (its text, usually its instruction): the objectives the file knows and the
 * highest impact among them; a task naming none is left out. `unknown`: ids named that the file does not declare.
 */
export function taskImpacts(
  tasks: readonly { name: string; text: string }[],
  scores: ReadonlyMap<string, ObjectiveScore>,
): { impacts: Map<string, TaskImpact>; unknown: { task: string; id: string }[] } {
  const impacts = new Map<string, TaskImpact>();
  const unknown: { task: string; id: string }[] = [];
  for (const t of tasks) {
    const named = objectivesNamedIn(t.text);
    const known = named.filter((id) => scores.has(id));
    for (const id of named) if (!scores.has(id)) unknown.push({ task: t.name, id });
    if (known.length > 0)
      impacts.set(t.name, { objectives: known, score: Math.max(...known.map((id) => scores.get(id)?.impact ?? 0)) });
  }
  return { impacts, unknown };
}

/**
 * The tasks in impact order (spec 07): the slots held by tasks that name objectives are filled by
 * those tasks highest impact first; a task naming none keeps its slot; equal impacts keep the
 * written order (the sort is stable).
 */
export function orderByImpact<T extends { name: string }>(
  tasks: readonly T[],
  impacts: ReadonlyMap<string, TaskImpact>,
): T[] {
  const slots = tasks.flatMap((t, i) => (impacts.has(t.name) ? [i] : []));
  const scoreOf = (t: T) => impacts.get(t.name)?.score ?? 0;
  const ranked = slots.map((i) => tasks[i] as T).sort((a, b) => scoreOf(b) - scoreOf(a));
  const out = [...tasks];
  slots.forEach((slot, k) => (out[slot] = ranked[k] as T));
  return out;
}

/** The evidence records a job leaves the objectives it named, when it ends (spec 07). */
export function objectiveEvidenceOf(
  named: readonly string[],
  job: { id: string; workspace: string; status: JobStatus; filesChanged: readonly string[]; ts: number },
): ObjectiveEvidence[] {
  return named.map((objective) => ({
    objective,
    job_id: job.id,
    workspace: job.workspace,
    status: job.status,
    files_changed: [...job.filesChanged],
    confidence: job.status === 'done' ? 0.6 : 0.4,
    ts: job.ts,
  }));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A value as a warning quotes it: JSON, cut short. */
function show(v: unknown): string {
  const text = v === undefined ? 'nothing' : (JSON.stringify(v) ?? String(v));
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}
