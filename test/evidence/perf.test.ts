import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSnapshots, takeSnapshot } from '../../src/evidence/index.js';
import { forgetWarmState } from '../../src/evidence/warm-state.js';
import { cleanEnv, git, tempDir } from './helpers.js';

/**
 * The spec 10 bar on a generated 50,000-file repository, against git itself on the same tree:
 * first checkpoint <= 1.3x `git add -A && git write-tree` (fresh index and object store),
 * re-checkpoint after 10 changed files and the diff <= 2x `git status --porcelain`. The
 * re-checkpoint is the daemon's case (the same process took the pre-snapshot); the one after a
 * restart (`secondCold`) is reported, not held to the bar.
 * Slow (a minute): run with `GAFFER_PERF=1 npx vitest run test/evidence/perf.test.ts`.
 */
describe.skipIf(process.env.GAFFER_PERF !== '1')('checkpoint performance on 50,000 files', () => {
  it('meets the bar against git add -A + write-tree and git status', { timeout: 600_000 }, async () => {
    const ws = await tempDir('gaffer-perf-');
    for (let a = 0, made = 0; made < 50_000; a++) {
      for (let b = 0; b < 10 && made < 50_000; b++) {
        const dir = path.join(ws, `pkg${a}`, `mod${b}`);
        await fs.mkdir(dir, { recursive: true });
        for (let c = 0; c < 50 && made < 50_000; c++, made++) {
          await fs.writeFile(path.join(dir, `file${c}.ts`), `export const v${made} = ${made};\n// ${'x'.repeat(made % 200)}\n`);
        }
      }
    }
    git(ws, 'init', '-q');
    git(ws, 'add', '-A');
    git(ws, 'commit', '-qm', 'init');
    await new Promise((r) => setTimeout(r, 1100)); // no racily-clean index entries

    const time = async (fn: () => unknown): Promise<number> => {
      const t = performance.now();
      await fn();
      return performance.now() - t;
    };
    const rows: Array<Record<string, number>> = [];
    for (let round = 0; round < 3; round++) {
      const scratch = await tempDir('gaffer-perf-git-');
      const env = { ...cleanEnv(), GIT_INDEX_FILE: path.join(scratch, 'index') };
      execFileSync('git', ['init', '-q', '--bare', scratch], { env });
      const gitAdd = await time(() => {
        execFileSync('git', [`--git-dir=${scratch}`, `--work-tree=${ws}`, 'add', '-A'], { cwd: ws, env });
        execFileSync('git', [`--git-dir=${scratch}`, `--work-tree=${ws}`, 'write-tree'], { cwd: ws, env });
      });
      const data = await tempDir('gaffer-perf-data-');
      let pre = await takeSnapshot({ workspace: ws, dataDir: data, jobId: `j${round}`, label: 'pre' });
      await fs.rm(data, { recursive: true, force: true });
      const first = await time(async () => {
        pre = await takeSnapshot({ workspace: ws, dataDir: data, jobId: `j${round}`, label: 'pre' });
      });
      for (let i = 0; i < 10; i++) await fs.appendFile(path.join(ws, `pkg${i + round * 10}`, 'mod1', 'file3.ts'), '// changed\n');
      const status = await time(() => execFileSync('git', ['status', '--porcelain'], { cwd: ws, env: cleanEnv() }));
      let post = pre;
      const second = await time(async () => {
        post = await takeSnapshot({ workspace: ws, dataDir: data, jobId: `j${round}`, label: 'post', like: pre });
      });
      // the same after a restart: no remembered state, the whole shadow index is read
      for (let i = 0; i < 10; i++) await fs.appendFile(path.join(ws, `pkg${i + round * 10}`, 'mod2', 'file3.ts'), '// changed\n');
      forgetWarmState(path.join(data, 'shadow', path.basename(post.gitDir as string)));
      const secondCold = await time(() => takeSnapshot({ workspace: ws, dataDir: data, jobId: `j${round}`, label: 'post-cold', like: pre }));
      let modified = 0;
      const diff = await time(async () => {
        modified = (await diffSnapshots(pre, post)).modified.length;
      });
      expect(pre.source).toBe('checkpoint');
      expect(modified).toBe(10);
      rows.push({ gitAdd, first, status, second, secondCold, diff });
      await fs.rm(scratch, { recursive: true, force: true });
      await fs.rm(data, { recursive: true, force: true });
    }
    const median = (k: string): number => rows.map((r) => r[k] as number).sort((x, y) => x - y)[1] as number;
    const m = Object.fromEntries(['gitAdd', 'first', 'status', 'second', 'secondCold', 'diff'].map((k) => [k, Math.round(median(k))]));
    console.log(`median of 3 (ms): ${JSON.stringify(m)}; all rounds: ${JSON.stringify(rows.map((r) => Object.values(r).map(Math.round)))}`);
    expect(m.first).toBeLessThanOrEqual(1.3 * (m.gitAdd as number));
    expect(m.second).toBeLessThanOrEqual(2 * (m.status as number));
    expect(m.diff).toBeLessThanOrEqual(2 * (m.status as number));
    await fs.rm(ws, { recursive: true, force: true });
  });
});
