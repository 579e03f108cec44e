import type { z } from 'zod';
import type {
  answerTaskSchema,
  compactChangesSchema,
  compactJobSchema,
  compactResultSchema,
  compactVerificationSchema,
  compactWorkerEntrySchema,
  compactWorkerSchema,
  fullJobSchema,
  jobListSchema,
  progressEntrySchema,
  steerAnswerSchema,
  waitAnswerSchema,
} from './answer-schema.js';

/*
 * The public answer of spec 03, compact and full (`?full=1`): what every door returns for a job.
 * Built by engine/queries/compact.ts from the store's rows; the types are the schema's (answer-schema.ts),
 * so what the doors check and what the code reads are one definition.
 */

/** A worker row of the answer (spec 03); without `full`, fields that are 0, null or empty are left out (see CompactWorkerEntry). */
export type CompactWorker = z.infer<typeof compactWorkerSchema>;

/** A worker row as answered: the kept fields always, the rest when they say something (all of them with `full`). */
export type CompactWorkerEntry = z.infer<typeof compactWorkerEntrySchema>;

/** The verification in the compact answer: each failing id named once, every list bounded with `<list>_count` (issue 33; see compactVerificationSchema). */
export type CompactVerification = z.infer<typeof compactVerificationSchema>;

/** `changes` as answered: the kept fields always, the flags and lists of the unusual when they hold something. */
export type CompactChanges = z.infer<typeof compactChangesSchema>;

/** The answer's `result`: the workers' rows and what the job has learnt so far (the job result less its internal counters). */
export type CompactResult = z.infer<typeof compactResultSchema>;

/** A live worker's entry in `progress`. */
export type ProgressEntry = z.infer<typeof progressEntrySchema>;

/** A task as the answer lists it; `model` is left out of the compact answer when the task names none. */
export type AnswerTask = z.infer<typeof answerTaskSchema>;

/** The answer of spec 03 for one job: what a coordinator reads, never a transcript. */
export type CompactJob = z.infer<typeof compactJobSchema>;

/** The answer with `?full=1`: every field, the workers' full rows and the job's evidence. */
export type FullJob = z.infer<typeof fullJobSchema>;

/** A listing of jobs as briefs (compact without `result`). */
export type JobList = z.infer<typeof jobListSchema>;

/** A wait's answer: `{met, condition, waited_s, state}`, `state` the compact job. */
export type WaitAnswerJson = z.infer<typeof waitAnswerSchema>;

/** A steer's answer (issue 16): `{id, delivery, job_id, task, worker, waiting, follow_up_job, detail}`. */
export type SteerAnswer = z.infer<typeof steerAnswerSchema>;
