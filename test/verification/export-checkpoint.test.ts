import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { takeSnapshot } from '../../src/evidence/index.js';
import { exportCheckpoint } from '../../src/verification/baseline.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'gaffer-export-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('exportCheckpoint', () => {
  it('succeeds every time, whichever of git and tar is seen to end first (it raced: 1 in ~200 failed)', async () => {
    const ws = path.join(root, 'ws');
    mkdirSync(path.join(ws, 'src'), { recursive: true });
    for (let i = 0; i < 20; i++) writeFileSync(path.join(ws, 'src', `f${i}.js`), `export const f${i} = ${i};\n`);
    const pre = await takeSnapshot({ workspace: ws, dataDir: path.join(root, 'data'), jobId: 'j', label: 'pre' });
    const failures: string[] = [];
    await Promise.all(
      [0, 1, 2, 3].map(async (lane) => {
        for (let i = 0; i < 100; i++) {
          const dir = path.join(root, `out-${lane}`);
          try {
            await exportCheckpoint(pre, dir);
            if (readFileSync(path.join(dir, 'src', 'f7.js'), 'utf8') !== 'export const f7 = 7;\n')
              failures.push(`lane ${lane} #${i}: wrong content`);
          } catch (err) {
            failures.push(`lane ${lane} #${i}: ${err instanceof Error ? err.message : String(err)}`);
          }
        }
      }),
    );
    expect(failures).toEqual([]);
  }, 60_000);
});
