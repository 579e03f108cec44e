import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { GafferError } from '../../domain/errors.js';
import type { RunnerReport } from '../../domain/runner-report.js';
import { remoteRepoSchema } from '../../domain/remote-repo.js';
import { WORKER_STATUSES } from '../../domain/status.js';
import { blankReport } from '../../runners/report.js';

/**
 * What crosses the wire between the coordinator and its nodes (spec 09): one BullMQ queue per
 * runner, each attempt a BullMQ job whose data is a {@link SignedEntry} (an opaque reference), whose
 * progress updates are {@link WireProgress} and whose return value is a {@link WireResult}. The
 * attempt itself ({@link WireAttempt}) and the workspace never ride on Redis: the node that took
 * the entry claims the attempt from the coordinator's HTTP API, fetches a git bundle of its base
 * there, and sends its commit back the same way.
 */

/** The namespace a coordinator and its nodes use when none is named (`--queue-prefix`): BullMQ's `prefix` of every key. */
export const DEFAULT_QUEUE_PREFIX = 'gaffer';
/** How long a cancel is remembered for a node that takes the attempt later, s. */
export const CANCEL_TTL_S = 3_600;
/** The HTTP header that carries an attempt's ticket (with the node's credential as the bearer). */
export const TICKET_HEADER = 'gaffer-ticket';
/** The HTTP header naming one upload of an attempt's result. */
export const UPLOAD_HEADER = 'gaffer-upload';

/** The queue of one node's attempts (all its runners): only the coordinator puts entries there, each for that node alone. */
export const queueName = (node: string): string => `node-${node}`;
/** The pub/sub channel a namespace's cancels are published on: the message is the attempt's key. */
export const cancelChannel = (prefix: string): string => `${prefix}:cancel`;
/** The Redis key that remembers an attempt's cancel. */
export const cancelKey = (prefix: string, key: string): string => `${prefix}:cancelled:${key}`;
/** The Redis key of the coordinator that holds a namespace (one coordinator per namespace). */
export const coordinatorKey = (prefix: string): string => `${prefix}:coordinator`;
/** The Redis key where a namespace's coordinator says where its nodes reach it (its advertised URL and host). */
export const advertisedKey = (prefix: string): string => `${prefix}:advertised`;
/** The node route a node checks its credential and its path to the coordinator with. */
export const HELLO_ROUTE = '/api/node/hello';
/** How often the coordinator offers an attempt (a node failed to claim, fetch or report it, or its claim was refused), besides a stalled node's hand-over. */
export const NODE_TRIES = 3;

const PREFIX = /^[A-Za-z0-9._-]{1,64}$/;

/** A `--queue-prefix` as given, or a refusal naming the value and what a name may hold. */
export function vetQueuePrefix(prefix: string): string {
  if (!PREFIX.test(prefix))
    throw new GafferError(
      'invalid_request',
      `--queue-prefix must be 1..64 of A-Z a-z 0-9 . _ - (the namespace of this cluster's keys on the Redis), got ${JSON.stringify(prefix)}`,
      'queue-prefix',
    );
  return prefix;
}

/** BullMQ's connection options for a `--queue` URL (`redis://[user:password@]host:port[/db]`, or `rediss://`). */
export function connectionOf(url: string): { url: string; maxRetriesPerRequest: null } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GafferError(
      'invalid_request',
      `--queue must be a redis:// URL (redis://host:6379), got ${JSON.stringify(url)}`,
      'queue',
    );
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
    throw new GafferError(
      'invalid_request',
      `--queue must be a redis:// or rediss:// URL, got ${JSON.stringify(url)}`,
      'queue',
    );
  if (parsed.hostname === '')
    throw new GafferError(
      'invalid_request',
      `--queue names no host: ${JSON.stringify(url)} (redis://host:6379)`,
      'queue',
    );
  // BullMQ's workers need commands that wait for a reconnect rather than fail (its own advice)
  return { url, maxRetriesPerRequest: null };
}

/** The URL as it can be printed: no password. */
export function describeQueue(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

const KEY = /^[A-Za-z0-9._+-]{1,200}$/;
const SHA = /^[0-9a-f]{40,64}$/;

/** One attempt as the coordinator hands it to the node that claimed its entry: who runs it, from what, and where the node fetches its base and sends its commit. */
export const wireAttemptSchema = z.object({
  v: z.literal(1),
  /** The attempt's key: the BullMQ job id, `<job>.<worker>.<n>`. */
  key: z.string().regex(KEY),
  /** The coordinator's HTTP API (the base bundle and the result go through it). */
  coordinator: z.string().url(),
  /** This attempt's capability on the coordinator's node routes, made for the claim that got it (never on Redis). */
  ticket: z.string().min(32).max(100),
  /** The exported base commit. */
  base: z.string().regex(SHA),
  /** The node's cache key for the workspace's repository. */
  repo: z.string().regex(/^[0-9a-f]{16,64}$/),
  /** The workspace below the repository's top ('' at the top). */
  prefix: z.string().max(4096),
  /** `gaffer/<job>/<task>`. */
  branch: z.string().min(1).max(300),
  /**
   * spec 09: the job's remote repository. The node fetches the base from it (the coordinator's bundle
   * when the base is not there: a fix round's) and pushes its branch to it; the coordinator fetches
   * the branch back from it.
   */
  remote: remoteRepoSchema.required().optional(),
  runner: z.string().min(1).max(64),
  /** The dependency folders the coordinator's workspace has (`node_modules`, `.venv`): the node installs them from the lockfile (spec 06's worktree flow). */
  deps: z
    .array(z.string().regex(/^[A-Za-z0-9._-]{1,64}$/))
    .max(8)
    .optional(),
  /** The runner's input, less what is the node's own (env, files, signal, callbacks). */
  input: z.object({
    jobId: z.string().min(1).max(64),
    workerName: z.string().min(1).max(200),
    attempt: z.number().int().min(1),
    role: z.enum(['worker', 'fixer', 'reviewer']),
    instruction: z.string(),
    command: z.string().nullable(),
    model: z.string().nullable(),
    endpoint: z.string().optional(),
    timeoutMs: z.number().int().positive(),
    maxRounds: z.number().int().positive(),
    resume: z.string().nullable(),
    files: z.array(z.string()),
    outputs: z.array(z.string()).optional(),
    sandbox: z.boolean(),
  }),
});
export type WireAttempt = z.infer<typeof wireAttemptSchema>;

/** The one-time value of an entry: 32 random bytes, base64url. */
const ONCE = /^[A-Za-z0-9_-]{43}$/;

/**
 * An attempt as it rides on Redis: an opaque reference, offered by the coordinator to one node it
 * chose (on that node's queue, signed with that node's key). That node claims the attempt itself
 * ({@link WireAttempt}: the instruction, the command, the ticket) from the coordinator over the node
 * routes, authenticated by its own credential, with `once`; the coordinator hands it over once, to
 * the node it offered it to, while the attempt is live and the entry unexpired. Redis decides
 * nothing: another node that reads or takes the entry is refused.
 */
export const queueEntrySchema = z.object({
  v: z.literal(3),
  /** The BullMQ job id it was added under: a copy added under another id is refused. */
  id: z.string().regex(KEY),
  /** The attempt's key (`<job>.<worker>.<n>`). */
  key: z.string().regex(KEY),
  /** The namespace it was put in (`--queue-prefix`): a copy moved to another namespace is refused. */
  prefix: z.string().regex(PREFIX),
  runner: z.string().min(1).max(64),
  /** The node the coordinator offered it to: no other node's claim is granted. */
  node: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  /** The coordinator's HTTP API, where the attempt is claimed. */
  coordinator: z.string().url(),
  /** When it stops being runnable, ms since the epoch (the coordinator's clock decides its claim). */
  expires: z.number().int().positive(),
  /** The one-time value the coordinator consumes when the entry's taker claims the attempt. */
  once: z.string().regex(ONCE),
});
export type QueueEntry = z.infer<typeof queueEntrySchema>;

/** A queue entry and the coordinator's HMAC of it under the key of the node it is offered to (its credential's digest). */
export interface SignedEntry {
  entry: QueueEntry;
  /** HMAC-SHA256 of the entry's canonical JSON, hex. */
  sig: string;
}

/** A node's claim of the attempt behind the entry it took (`POST /api/node/attempts/:key/claim`); who claims is its credential. */
export const claimSchema = z.object({
  /** The entry's one-time value. */
  once: z.string().regex(ONCE),
  /** The node's `--stall-s`: how long the coordinator may hear nothing of the claimed attempt before it takes it for lost. */
  stall_s: z.number().int().min(2).max(3_600).optional(),
});
export type Claim = z.infer<typeof claimSchema>;

/** JSON with every object's keys sorted: the same bytes for the same data, whatever order the keys came in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const hmac = (token: string, value: unknown): string =>
  createHmac('sha256', token).update(canonical(value)).digest('hex');

/** The queue entry of an attempt, signed with the key of the node it is offered to. */
export function signEntry(entry: QueueEntry, key: string): SignedEntry {
  return { entry, sig: hmac(key, entry) };
}

/**
 * The entry a node took, when the coordinator signed it with this node's key, for this node, this
 * very queue entry id and namespace, and it has not expired; else why not. Checked before anything
 * of it is used: nothing is claimed, no credential sent, no runner started.
 */
export function verifyEntry(
  data: unknown,
  key: string,
  where: { id: string | undefined; prefix: string; node: string; now: number },
): { entry: QueueEntry } | { refused: string } {
  const signed = data as Partial<SignedEntry> | null;
  if (
    signed === null ||
    typeof signed !== 'object' ||
    typeof signed.sig !== 'string' ||
    !/^[0-9a-f]{64}$/.test(signed.sig)
  )
    return { refused: 'not a signed gaffer attempt' };
  const expected = Buffer.from(hmac(key, signed.entry), 'hex');
  if (!timingSafeEqual(expected, Buffer.from(signed.sig, 'hex')))
    return {
      refused:
        "its signature is not the coordinator's under this node's credential (a forged entry, another node's, or a credential the coordinator replaced)",
    };
  const parsed = queueEntrySchema.safeParse(signed.entry);
  if (!parsed.success) return { refused: `not a gaffer attempt: ${parsed.error.issues[0]?.message ?? 'unreadable'}` };
  const entry = parsed.data;
  if (entry.id !== where.id)
    return { refused: `it was signed for queue entry ${entry.id}: a copy added as ${where.id ?? '?'} (a replay)` };
  if (entry.node !== where.node) return { refused: `it was offered to node ${entry.node}, not this node` };
  if (entry.prefix !== where.prefix)
    return { refused: `it was signed for namespace ${entry.prefix}, not this node's ${where.prefix} (a replay)` };
  if (entry.expires <= where.now)
    return { refused: `it expired at ${new Date(entry.expires).toISOString()} (a replay, or it waited too long)` };
  return { entry };
}

const detectionSchema = z.object({ state: z.string(), why: z.string(), matched: z.string(), confidence: z.number() });

/** A node's word on an attempt as it runs (`POST /api/node/attempts/:key/progress`, with its ticket): output lines, a detected state. */
export const wireProgressSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('output'), lines: z.array(z.string()).max(1_000) }),
  z.object({ type: z.literal('state'), detection: detectionSchema }),
]);
export type WireProgress = z.infer<typeof wireProgressSchema>;

/** The runner report fields a node may fill; the engine's own (spend, audit, observed) are never taken from a node. */
const wireReportSchema = z.object({
  status: z.enum(WORKER_STATUSES),
  outcome: z.enum(['success', 'expected_error', 'cancelled', 'panic']),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  timedOut: z.boolean(),
  isCancelled: z.boolean(),
  stopReason: z.string().max(100),
  error: z.string().nullable(),
  summary: z.string(),
  filesChanged: z.array(z.string()),
  makesClaims: z.boolean(),
  rounds: z.number().int().min(0),
  toolCalls: z.number().int().min(0),
  failedCalls: z.number().int().min(0),
  inputTokens: z.number().min(0),
  outputTokens: z.number().min(0),
  costUsd: z.number().nullable(),
  durationMs: z.number().min(0),
  session: z.string().nullable(),
  modelServed: z.string().nullable(),
  detection: detectionSchema.nullable(),
  refusals: z.array(z.object({ tool: z.string(), why: z.string(), count: z.number() })),
  sandboxed: z.boolean(),
  network: z.enum(['none', 'outbound', 'host']).optional(),
  limit: z.enum(['processes', 'memory']).optional(),
  retryAfterS: z.number().nullable().optional(),
});

/** A node gives back an attempt it claimed and cannot finish (`POST /api/node/attempts/:key/release`, with its ticket): the coordinator offers it to another node. */
export const releaseSchema = z.object({
  /** Why it cannot (a fetch or a send that failed), as the node saw it. */
  why: z.string().min(1).max(2_000),
});
export type Release = z.infer<typeof releaseSchema>;

/** How long the coordinator waits for a claimed attempt's node when it says nothing of a stall window, s (`gaffer node --stall-s`'s default). */
export const DEFAULT_STALL_S = 30;

/** What a node reports for an attempt (`POST /api/node/attempts/:key/report`, with its ticket): the runner's report (a claim), and the commit it sent as a bundle (null: nothing changed). */
export const wireResultSchema = z.object({
  v: z.literal(1),
  node: z.string().max(200),
  report: wireReportSchema,
  /** The branch tip it committed; null when the worktree held nothing new. */
  commit: z.string().regex(SHA).nullable(),
  /** The upload that carried the commit's bundle to the coordinator; null with no commit, or when it was pushed. */
  upload: z.string().max(64).nullable(),
  /** The commit was pushed to the job's remote repository on the attempt's branch (spec 09), not uploaded. */
  pushed: z.boolean().optional(),
  /** Why the push to the remote failed, when it did (the bundle was uploaded instead). */
  pushRefused: z.string().max(1_000).optional(),
});
export type WireResult = z.infer<typeof wireResultSchema>;

/** The report a node sent, as the engine's type (the node's word: a claim; the coordinator's evidence decides). */
export function reportOfWire(r: WireResult['report']): RunnerReport {
  // the detection's state is one of the runners' words; the schema only checked it is a string
  return blankReport({ ...r, detection: r.detection as RunnerReport['detection'] });
}

/** JSON text parsed, or the text itself when it is not JSON (BullMQ hands some values back as strings). */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** `promise`, or a rejection after `ms` (a Redis that does not answer). */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
