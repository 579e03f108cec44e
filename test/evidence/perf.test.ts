import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSnapshots, takeSnapshot } from '../../src/evidence/index.js';
import type { Snapshot } from '../../src/domain/snapshot.js';
import { forgetWarmState } from '../../src/evidence/warm-state.js';
import { cleanEnv, git, tempDir } from './helpers.js';

const FILES = 50_000;

async function time(fn: () => unknown): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

function median(values: number[]): number {
  return Math.round([...values].sort((a, b) => a - b)[values.length >> 1] as number);
}

/** A committed repository of 50,000 small files in 1,000 folders. */
async function generateRepo(): Promise<string> {
  const ws = await tempDir('gaffer-perf-');
  for (let a = 0, made = 0; made < FILES; a++) {
    for (let b = 0; b < 10 && made < FILES; b++) {
      const dir = path.join(ws, `pkg${a}`, `mod${b}`);
      await fs.mkdir(dir, { recursive: true });
      for (let c = 0; c < 50 && made < FILES; c++, made++) {
        await fs.writeFile(
          path.join(dir, `file${c}.ts`),
          `export const v${made} = ${made};\n// ${'x'.repeat(made % 200)}\n`,
        );
      }
    }
  }
  git(ws, 'init', '-q');
  git(ws, 'add', '-A');
  git(ws, 'commit', '-qm', 'init');
  await new Promise((r) => setTimeout(r, 1100)); // no racily-clean index entries
  return ws;
}

/**
 * The spec 10 bar on a generated 50,000-file repository, against git itself on the same tree:
 * first checkpoint <= 1.3x `git add -A && git write-tree` (fresh index and object store),
 * re-checkpoint after 10 changed files and the diff <= 2x `git status --porcelain`. Medians of
 * interleaved runs (a shared machine is noisy). The re-checkpoint is the daemon's case (the same
 * process took the pre-snapshot); the one after a restart (`secondCold`) is reported, not held to
 * the bar. Slow (a minute or two): `GAFFER_PERF=1 npx vitest run test/evidence/perf.test.ts`
 * (TMPDIR=/dev/shm takes the disk out of the comparison).
 */
describe.skipIf(process.env.GAFFER_PERF !== '1')('checkpoint performance on 50,000 files', () => {
  it('meets the bar against git add -A + write-tree and git status', { timeout: 900_000 }, async () => {
    const ws = await generateRepo();
    const data = await tempDir('gaffer-perf-data-');
    const gitAdd: number[] = [];
    const first: number[] = [];
    let pre: Snapshot | undefined;
    for (let round = 0; round < 3; round++) {
      const scratch = await tempDir('gaffer-perf-git-');
      const env = { ...cleanEnv(), GIT_INDEX_FILE: path.join(scratch, 'index') };
      execFileSync('git', ['init', '-q', '--bare', scratch], { env });
      gitAdd.push(
        await time(() => {
          execFileSync('git', [`--git-dir=${scratch}`, `--work-tree=${ws}`, 'add', '-A'], { cwd: ws, env });
          execFileSync('git', [`--git-dir=${scratch}`, `--work-tree=${ws}`, 'write-tree'], { cwd: ws, env });
        }),
      );
      await fs.rm(scratch, { recursive: true, force: true });
      await fs.rm(data, { recursive: true, force: true });
      first.push(
        await time(
          async () => (pre = await takeSnapshot({ workspace: ws, dataDir: data, jobId: 'job', label: 'pre' })),
        ),
      );
    }
    if (pre === undefined) throw new Error('no pre-snapshot');
    expect(pre.source).toBe('checkpoint');

    const status: number[] = [];
    const second: number[] = [];
    const secondCold: number[] = [];
    const diff: number[] = [];
    for (let i = 0; i < 12; i++) {
      for (let k = 0; k < 10; k++)
        await fs.appendFile(path.join(ws, `pkg${k + 10 * (i % 5)}`, `mod${i % 10}`, `file${i}.ts`), '// changed\n');
      status.push(await time(() => execFileSync('git', ['status', '--porcelain'], { cwd: ws, env: cleanEnv() })));
      const cold = i % 4 === 3;
      // every fourth: as after a restart, nothing remembered, the whole shadow index is read
      if (cold) forgetWarmState(pre.gitDir as string);
      let post: Snapshot = pre;
      const took = await time(
        async () =>
          (post = await takeSnapshot({ workspace: ws, dataDir: data, jobId: 'job', label: `post-${i}`, like: pre })),
      );
      (cold ? secondCold : second).push(took);
      let modified = 0;
      diff.push(await time(async () => (modified = (await diffSnapshots(pre as Snapshot, post)).modified.length)));
      expect(modified).toBeGreaterThanOrEqual(10);
    }
    const m = {
      gitAdd: median(gitAdd),
      first: median(first),
      status: median(status),
      second: median(second),
      secondCold: median(secondCold),
      diff: median(diff),
    };
    console.log(
      `medians (ms): ${JSON.stringify(m)}; ratios: first/gitAdd ${(m.first / m.gitAdd).toFixed(2)}, second/status ${(m.second / m.status).toFixed(2)}, diff/status ${(m.diff / m.status).toFixed(2)}`,
    );
    expect(m.first).toBeLessThanOrEqual(1.3 * m.gitAdd);
    expect(m.second).toBeLessThanOrEqual(2 * m.status);
    expect(m.diff).toBeLessThanOrEqual(2 * m.status);
    await fs.rm(ws, { recursive: true, force: true });
    await fs.rm(data, { recursive: true, force: true });
  });
});
