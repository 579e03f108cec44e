import { promises as fs } from 'node:fs';
import path from 'node:path';

const known = new Map<string, boolean>();

/**
 * Whether the filesystem holding `dir` ignores case in names (macOS and Windows defaults), probed
 * once per folder with a temporary file whose name differs from its probe only in case.
 */
export async function isCaseInsensitiveFs(dir: string): Promise<boolean> {
  const abs = path.resolve(dir);
  const cached = known.get(abs);
  if (cached !== undefined) return cached;
  const name = `.gaffer-case-probe-${process.pid}-${Date.now()}`;
  const file = path.join(abs, name);
  let insensitive: boolean;
  try {
    await fs.writeFile(file, '', { flag: 'wx' });
    insensitive = await fs
      .lstat(path.join(abs, name.toUpperCase()))
      .then(() => true)
      .catch(() => false);
  } catch {
    return false; // a folder we cannot write to: assume the stricter, case-sensitive comparison
  } finally {
    await fs.rm(file, { force: true });
  }
  known.set(abs, insensitive);
  return insensitive;
}
