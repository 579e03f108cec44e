import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildWorkerEnv } from '../../platform/process/env.js';
import { spawnCommand } from '../../platform/spawner/spawner.js';
import type { AskJson } from '../../domain/approval.js';
import type { JobRow } from '../../store/store.js';

/**
 * Config `notify` (spec 05 "the yes-gate"; the top ask on peer tools: tell me when it needs me or
 * is done, not on every event): a command and/or a webhook called when a job's asks open and when
 * a job ends. From the data dir's config only: the command runs with gaffer's rights.
 */
export interface NotifySettings {
  /** Run with `sh -c`; the event as JSON on stdin and in `GAFFER_NOTIFY_*` variables. */
  command: string | null;
  /** POSTed the event as JSON. */
  webhook: string | null;
}

export const NO_NOTIFY: NotifySettings = { command: null, webhook: null };

/** What is told: the job in a few fields, and the asks when they opened. */
export interface Notice {
  event: 'asks_opened' | 'job_ended';
  job: { id: string; title: string; status: string; verdict: string | null; workspace: string };
  asks?: AskJson[];
}

/** How long a notification may take before it is given up on, ms. */
const NOTIFY_TIMEOUT_MS = 10_000;

/** Tells the configured command and webhook; never throws and never holds the job up (a failure is the caller's note, if it wants one). */
export async function notify(settings: NotifySettings, notice: Notice): Promise<string[]> {
  const failures: string[] = [];
  const body = JSON.stringify(notice);
  const tasks: Promise<void>[] = [];
  if (settings.command !== null) {
    const command = settings.command;
    tasks.push(
      spawnCommand({
        cmd: 'sh',
        args: ['-c', command],
        cwd: notice.job.workspace,
        env: {
          ...buildWorkerEnv(process.env),
          GAFFER_NOTIFY_EVENT: notice.event,
          GAFFER_JOB_ID: notice.job.id,
          GAFFER_JOB_STATUS: notice.job.status,
          GAFFER_JOB_VERDICT: notice.job.verdict ?? '',
        },
        timeoutMs: NOTIFY_TIMEOUT_MS,
        input: body,
      }).then((r) => {
        if (r.exitCode !== 0)
          failures.push(
            `notify.command ${r.spawnError ?? (r.timedOut ? 'timed out' : `exit ${r.exitCode ?? 'signal'}`)}`,
          );
      }),
    );
  }
  if (settings.webhook !== null) {
    tasks.push(
      fetch(settings.webhook, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(NOTIFY_TIMEOUT_MS),
      }).then(
        (res) => {
          if (!res.ok) failures.push(`notify.webhook HTTP ${res.status}`);
        },
        (err: unknown) => {
          failures.push(`notify.webhook ${err instanceof Error ? err.message : String(err)}`);
        },
      ),
    );
  }
  await Promise.all(tasks);
  return failures;
}

/**
 * Tells of a job's event when anything is configured, in the background: what failed is appended
 * to the job's `notify.log` (and handed to `onFailure` while the job can still say it).
 */
export function notifyJob(
  settings: NotifySettings,
  notice: Notice,
  jobDir: string,
  onFailure?: (why: string) => void,
): void {
  if (settings.command === null && settings.webhook === null) return;
  void notify(settings, notice).then((failures) => {
    if (failures.length === 0) return;
    const why = `${notice.event} notification failed: ${failures.join('; ')}`;
    try {
      mkdirSync(jobDir, { recursive: true });
      appendFileSync(join(jobDir, 'notify.log'), `${new Date().toISOString()} ${why}\n`);
    } catch {
      // the job's folder is gone (pruned): nowhere left to say it
    }
    onFailure?.(why);
  });
}

/** A job row as a notice's `job`. */
export function noticeJob(job: Pick<JobRow, 'id' | 'title' | 'status' | 'verdict' | 'workspace'>): Notice['job'] {
  return { id: job.id, title: job.title, status: job.status, verdict: job.verdict, workspace: job.workspace };
}
