import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GafferError } from '../../domain/errors.js';
import type { RemoteRepo } from '../../domain/remote-repo.js';
import { shadowGitDir } from '../../evidence/paths.js';
import { serialized } from '../../evidence/worktree-git.js';
import { addDetachedWorktree, fetchRemoteRef, openCache, removeCacheWorktree } from '../../evidence/cluster-git.js';
import type { JobContext } from '../job-context.js';
import { vetTaskPaths } from '../admission/workspace-vetting.js';

/**
 * A job on a remote repository (spec 09 "Remote workspaces"): the coordinator keeps a bare cache of
 * each remote under `<data dir>/remotes/<hash of its URL>/cache.git`, and checks the job's ref out
 * for each job in a worktree of it, `…/jobs/<job>`: that checkout is the job's workspace — where its
 * checkpoint, evidence, verification and proof are made, exactly as for a local one. Each job starts
 * from the ref as the remote has it then, whatever jobs before it did; the checkout goes when the job
 * ends (its snapshots are in the data dir, its branches on the remote).
 */

/** A remote's folder under the data dir: its cache and its jobs' checkouts. */
export function remoteRoot(dataDir: string, url: string): string {
  return join(dataDir, 'remotes', createHash('sha256').update(url).digest('hex').slice(0, 16));
}

/** The workspace admission gives a job on `repo`. */
export function remoteCheckoutOf(dataDir: string, repo: RemoteRepo, jobId: string): string {
  return join(remoteRoot(dataDir, repo.url), 'jobs', jobId);
}

const cacheOf = (dataDir: string, repo: RemoteRepo): string => join(remoteRoot(dataDir, repo.url), 'cache.git');
/** The ref that keeps a job's starting commit in the cache while its checkout lives. */
const jobRef = (jobId: string): string => `refs/gaffer/jobs/${jobId}`;

/**
 * Git calls on one cache take turns with every other call on that repository in this process — a
 * node's branch fetched back, a base exported, another job's checkout (spec 06: one repository's git
 * calls are serialized). Keyed as {@link readRepo} names it from inside a checkout.
 */
function inLane<T>(cache: string, fn: () => Promise<T>): Promise<T> {
  mkdirSync(cache, { recursive: true });
  return serialized({ commonDir: realpathSync(cache) }, fn);
}

/** Fetches the job's ref and checks it out as its workspace; refused, naming the URL and git's reason, when the remote does not give it. */
export async function checkOutRemote(ctx: JobContext, repo: RemoteRepo): Promise<void> {
  const { dataDir } = ctx.services;
  const cache = cacheOf(dataDir, repo);
  ctx.phase(`fetching ${repo.ref} of ${repo.url}`);
  const commit = await inLane(cache, async () => {
    await openCache(cache);
    const fetched = await fetchRemoteRef(cache, repo.url, repo.ref, jobRef(ctx.id));
    if ('refused' in fetched)
      throw new GafferError(
        'invalid_request',
        `repo: ${repo.ref} of ${repo.url} could not be fetched: ${fetched.refused} — check the URL and ref, and that this machine's git can reach it`,
        'repo',
      );
    await addDetachedWorktree(cache, ctx.spec.workspace, fetched.commit);
    // the job's shadow repository (its snapshots) borrows the cache's objects: a blob the remote has is not stored again per job
    const shadowObjects = join(shadowGitDir(dataDir, ctx.spec.workspace), 'objects', 'info');
    mkdirSync(shadowObjects, { recursive: true });
    writeFileSync(join(shadowObjects, 'alternates'), `${join(realpathSync(cache), 'objects')}\n`);
    return fetched.commit;
  });
  ctx.phase(`checked out ${repo.ref} of ${repo.url} at ${commit.slice(0, 12)}`);
  // what admission could not look at before the checkout existed: a task's paths through the repository's links
  vetTaskPaths(ctx.spec.workspace, ctx.spec);
}

/** Removes the job's checkout and the ref that kept its commit. */
export async function dropRemoteCheckout(
  dataDir: string,
  repo: RemoteRepo,
  jobId: string,
  workspace: string,
): Promise<void> {
  const cache = cacheOf(dataDir, repo);
  await inLane(cache, () => removeCacheWorktree(cache, workspace, [jobRef(jobId)]));
}

/**
 * Removes the checkouts of jobs that are no longer live: a coordinator stopped mid-job (killed, a
 * crash) left them; its jobs were recorded interrupted when it started again.
 */
export async function sweepRemoteCheckouts(dataDir: string, isLive: (jobId: string) => boolean): Promise<void> {
  const remotes = join(dataDir, 'remotes');
  if (!existsSync(remotes)) return;
  for (const hash of readdirSync(remotes)) {
    const cache = join(remotes, hash, 'cache.git');
    const jobs = join(remotes, hash, 'jobs');
    if (!existsSync(jobs)) continue;
    for (const id of readdirSync(jobs)) {
      if (!isLive(id))
        await inLane(cache, () => removeCacheWorktree(cache, join(jobs, id), [jobRef(id)])).catch(() => undefined);
    }
  }
}
