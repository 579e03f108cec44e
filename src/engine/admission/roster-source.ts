import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { GafferError } from '../../domain/errors.js';
import { parseRoster, type Roster } from '../../domain/roster.js';
import { runGitSync } from '../../evidence/git.js';

/** The roster file's name, in the data dir or at a workspace's top. */
export const ROSTER_FILE = 'gaffer.roster.json';

/**
 * The roster that routes a job (spec 05): the config's `roster`, else `<data dir>/gaffer.roster.json`,
 * else the workspace's `gaffer.roster.json` **as committed at HEAD** — a worker can write the working
 * copy (and a roster chooses who runs and who is paid), so only what went through a commit counts;
 * a working copy that is not committed is refused, not silently skipped. One roster, never merged.
 * Files are read at each submission, so an edit applies to the next job without a restart.
 */
export function rosterFor(configured: Roster | null, dataDir: string, workspace: unknown): Roster | null {
  if (configured) return configured;
  const own = join(dataDir, ROSTER_FILE);
  if (existsSync(own))
    return parseRoster(
      readJson(own, () => readFileSync(own, 'utf8')),
      own,
    );
  if (typeof workspace !== 'string' || !isAbsolute(workspace) || !existsSync(join(workspace, ROSTER_FILE))) return null;
  const where = join(workspace, ROSTER_FILE);
  const shown = runGitSync(['show', `HEAD:./${ROSTER_FILE}`], workspace);
  if (shown.status !== 0) {
    throw new GafferError(
      'invalid_request',
      `${where}: a workspace's roster is read as committed at HEAD (a worker could write the working copy), and this one is not committed — commit it, or move it to ${own}`,
      'roster',
    );
  }
  return parseRoster(
    readJson(`${where} (HEAD)`, () => shown.stdout),
    `${where} (as committed at HEAD)`,
  );
}

function readJson(name: string, read: () => string): unknown {
  let text: string;
  try {
    text = read();
  } catch (err) {
    throw new GafferError('invalid_request', `${name}: cannot read it: ${(err as Error).message}`, 'roster');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new GafferError('invalid_request', `${name}: not valid JSON: ${(err as Error).message}`, 'roster');
  }
}
