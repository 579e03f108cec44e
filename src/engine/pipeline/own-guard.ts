import type { JobContext } from '../job-context.js';

/**
 * Whether gaffer's own runs of the workspace's code — the verification, its baseline and original
 * tests, command gates and criteria — go through its sandbox. This process's own policy (config
 * `sandbox`) decides, never a worker's report: a worker on a cluster node ran on another machine, so
 * its `sandboxed` says nothing of what code it planted could reach here (docs/sandbox.md).
 */
export function sandboxesOwnRuns(ctx: JobContext): boolean {
  return ctx.services.sandbox.policy !== 'off';
}
