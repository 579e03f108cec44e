import { isAbsolute, relative } from 'node:path';

const READ_ONLY = /EROFS|read-only file system/i;
const QUOTED_PATH = /['"`‘’](\/[^'"`‘’\n]+)['"`‘’]/g;
const BARE_PATH = /(?:^|[\s(=])(\/[^\s'"`:,;()]+)/g;
const SHOWN = 5;

/**
 * The paths outside `workspace` that a sandboxed run's output says it could not write because the
 * filesystem is read-only (node's `EROFS: read-only file system, open '/x'`, sh's `cannot create
 * /x: Read-only file system`, Python's `[Errno 30] Read-only file system: '/x'`, go's `open /x:
 * read-only file system`): the sandbox refused them, and a failure or an inconclusive run may be
 * that refusal rather than the code (issue 11).
 */
export function findSandboxRefusals(output: string, workspace: string): string[] {
  const found = new Set<string>();
  for (const line of output.split('\n')) {
    if (!READ_ONLY.test(line)) continue;
    const quoted = [...line.matchAll(QUOTED_PATH)].map((m) => m[1] as string);
    const paths = quoted.length > 0 ? quoted : [...line.matchAll(BARE_PATH)].map((m) => m[1] as string);
    for (const path of paths) {
      const rel = relative(workspace, path);
      if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) continue;
      found.add(path);
      if (found.size >= SHOWN) return [...found];
    }
  }
  return [...found];
}
