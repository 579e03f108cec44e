import envPaths from 'env-paths';
import { resolve } from 'node:path';

/** The data dir: `--data-dir`, else `GAFFER_DATA_DIR`, else the platform's user data dir for gaffer. */
export function resolveDataDir(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const chosen = flag ?? env.GAFFER_DATA_DIR;
  return resolve(chosen && chosen.trim() ? chosen : envPaths('gaffer', { suffix: '' }).data);
}
