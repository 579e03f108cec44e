import type { CompactJob } from '../../../engine/queries/compact.js';
import type { CliApi } from '../api.js';
import type { CliContext } from '../cli-context.js';
import { LiveProgress } from '../live-progress.js';

/**
 * Follows a job to its end with live progress on stderr and answers its final compact form. In
 * process, an interrupt cancels the job this process runs; against a server, it only stops waiting.
 */
export async function watchToEnd(cli: CliContext, api: CliApi, job: CompactJob): Promise<CompactJob> {
  const live = new LiveProgress(
    process.stderr,
    job.tasks.map((t) => t.name),
  );
  const stop = () => {
    cli.err('\ngaffer: cancelling (workers are being stopped and evidence collected)…');
    api.cancel(job.id).catch(() => undefined);
  };
  const local = api.engine !== null;
  if (local) {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  }
  try {
    await api.follow(job.id, 0, (e) => live.push(e));
  } finally {
    if (local) {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
  }
  return api.get(job.id, false);
}
