import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

/** `bin/gaffer --data-dir DIR …` run in process of its own (no server: GAFFER_URL empty). */
export function gaffer(dataDir: string, args: string[]) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, GAFFER_URL: '' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A shell worker that writes one; told (in its instruction file) "make it two", writes two. */
export const WRITE_ONE_OR_TWO = `if grep -q 'make it two' "$GAFFER_INSTRUCTION_FILE"; then echo two > out.txt; else echo one > out.txt; fi`;
