import type {
  CompactChanges,
  CompactJob,
  CompactResult,
  CompactVerification,
  CompactWorkerEntry,
} from '../../src/domain/answer.js';

/*
 * Typed reads of a job's answer for tests: each part a test looks into must be there, and when it
 * is not the test fails here naming the part and the job (instead of a TypeError on `undefined`).
 */

type Proof = NonNullable<CompactResult['proof']>;

function missing(job: CompactJob, part: string): never {
  throw new Error(`job ${job.id} (${job.status}) has no ${part} in its answer`);
}

/** The answer's `result`. */
export function resultOf(job: CompactJob): CompactResult {
  return job.result ?? missing(job, 'result');
}

/** `result.verification`. */
export function verificationOf(job: CompactJob): CompactVerification {
  return resultOf(job).verification ?? missing(job, 'result.verification');
}

/** `result.proof`. */
export function proofOf(job: CompactJob): Proof {
  return resultOf(job).proof ?? missing(job, 'result.proof');
}

/** `result.changes`. */
export function changesOf(job: CompactJob): CompactChanges {
  return resultOf(job).changes ?? missing(job, 'result.changes');
}

/** `result.workers[index]`. */
export function workerOf(job: CompactJob, index = 0): CompactWorkerEntry {
  return resultOf(job).workers[index] ?? missing(job, `result.workers[${index}]`);
}
