// spec 05 "The task queue folder": each `*.json` in the folder is one task record (`id`, `title`,
// `type`, `source`, plus the task fields); gaffer writes its `status`, `gaps`, `job`, `task`,
// `attempts` and `returned_digest` back into it. A malformed record is reported and skipped; it
// never blocks the others.
import { gatesSchema } from './gates.js';
import { z } from 'zod';
import { groundingGaps } from './grounding.js';
import { knownKeysAt, suggestKeys } from './nearest-key.js';

/** What gaffer writes back into a record. */
export const QUEUE_STATUSES = [
  'returned',
  'held',
  'dispatched',
  'done',
  'failed',
  'refused',
  'cancelled',
  'error',
] as const;
export type QueueStatus = (typeof QUEUE_STATUSES)[number];

/** A record is (re)considered by `gaffer queue run` in these states; the others are dispatched or finished. */
const OPEN: ReadonlySet<QueueStatus | undefined> = new Set([undefined, 'returned', 'held']);

const text = z.string().trim().min(1);
const list = z.array(text.max(1_000)).max(200);

const attemptSchema = z.object({
  job: z.string(),
  worker: z.string(),
  runner: z.string(),
  model: z.string().nullable(),
  status: z.string(),
  outcome: z.string().nullable(),
});

export const queueRecordSchema = z.strictObject({
  id: text.max(200),
  title: text.max(500),
  type: text.max(64),
  source: text.max(1_000),
  instruction: text.max(20_000).optional(),
  files: list.optional(),
  outputs: list.optional(),
  criteria: list.optional(),
  receipts: list.optional(),
  done_means: list.optional(),
  abort_criteria: list.optional(),
  read_first: list.optional(),
  context: z.string().max(8_000).nullable().optional(),
  hold: text.max(500).nullable().optional(),
  runner: text.max(64).nullable().optional(),
  model: text.max(200).nullable().optional(),
  gates: gatesSchema.optional(),
  // written by gaffer
  status: z.enum(QUEUE_STATUSES).optional(),
  gaps: z.array(z.string()).optional(),
  job: z.string().nullable().optional(),
  // the name the job knows the record by: a later run collects its end by it, `gaffer follow-up JOB TASK` takes it
  task: z.string().optional(),
  attempts: z.array(attemptSchema).optional(),
  // the digest of the record's own fields when it was returned: it goes out again only once they change
  returned_digest: z.string().optional(),
  updated: z.string().optional(),
});

export type QueueRecord = z.output<typeof queueRecordSchema>;
export type QueueAttempt = z.output<typeof attemptSchema>;

/** A record read, or why it could not be. */
export type ReadRecord = { file: string; record: QueueRecord } | { file: string; malformed: string };

/** Parses one file's JSON text as a record; a refusal names the field and what it takes. */
export function parseQueueRecord(file: string, raw: string): ReadRecord {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    return { file, malformed: `not valid JSON: ${(err as Error).message}` };
  }
  const parsed = queueRecordSchema.safeParse(json);
  if (parsed.success) return { file, record: parsed.data };
  const issue = parsed.error.issues[0];
  const field = (issue?.path ?? []).map(String).join('.') || 'record';
  const what =
    issue?.code === 'unrecognized_keys'
      ? `unknown key(s) ${issue.keys.join(', ')}${((s) => (s ? ` — ${s}` : ''))(suggestKeys(issue.keys, knownKeysAt(queueRecordSchema, issue.path)))}`
      : (issue?.message ?? 'invalid');
  return { file, malformed: `${field}: ${what} (a record needs id, title, type and source)` };
}

/** The fields gaffer writes back; every other field is the record's own, and gaffer never changes one. */
export const GAFFER_FIELDS = ['status', 'gaps', 'job', 'task', 'attempts', 'returned_digest', 'updated'] as const;

/** The record's own fields (its author's), without what gaffer wrote into it. */
export function ownFields(record: QueueRecord): Omit<QueueRecord, (typeof GAFFER_FIELDS)[number]> {
  const own: Record<string, unknown> = { ...record };
  for (const f of GAFFER_FIELDS) delete own[f];
  return own as Omit<QueueRecord, (typeof GAFFER_FIELDS)[number]>;
}

/** The record's own fields as one text that changes exactly when one of them does (key order and layout do not count). */
export function ownFieldsText(record: QueueRecord): string {
  return JSON.stringify(ownFields(record), (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}

/** Whether `gaffer queue run` considers the record (not dispatched, not finished). */
export function isOpen(record: QueueRecord): boolean {
  return OPEN.has(record.status);
}

/** A queued task is always grounded (spec 05): its gaps, or empty when it may be dispatched. */
export function recordGaps(record: QueueRecord): string[] {
  return groundingGaps(record, true);
}

/** The record as a job's task: its name from its id, its instruction its own or its title, grounded. */
export function recordTask(record: QueueRecord, name: string, file: string): Record<string, unknown> {
  const origin = `queued task ${record.id} from ${record.source} (${file})`;
  return {
    name,
    instruction: record.instruction ?? record.title,
    type: record.type,
    grounded: true,
    receipts: record.receipts,
    done_means: record.done_means,
    context: record.context ? `${record.context}\n${origin}` : origin,
    ...(record.files ? { files: record.files } : {}),
    ...(record.outputs ? { outputs: record.outputs } : {}),
    ...(record.criteria ? { criteria: record.criteria } : {}),
    ...(record.abort_criteria ? { abort_criteria: record.abort_criteria } : {}),
    ...(record.read_first ? { read_first: record.read_first } : {}),
    ...(record.runner ? { runner: record.runner } : {}),
    ...(record.model ? { model: record.model } : {}),
    ...(record.gates ? { gates: record.gates } : {}),
  };
}

/** Task names for the records' ids: the id lower-cased with anything else as `-`, unique in the run. */
export function taskNames(ids: readonly string[]): string[] {
  const taken = new Set<string>();
  return ids.map((id) => {
    const base = (
      id
        .toLowerCase()
        .replace(/[^a-z0-9._-]+/g, '-')
        .replace(/^[^a-z0-9]+/, '') || 'task'
    ).slice(0, 56);
    let name = base === 'job' ? 'job-task' : base;
    for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
    taken.add(name);
    return name;
  });
}
