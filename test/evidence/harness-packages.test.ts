// issue 32: the packages the tests run through are recorded whole and by content, whatever the size of the
// dependency folder; a workspace without one pays nothing for it.
import { execFileSync } from 'node:child_process';
import type * as ChildProcess from 'node:child_process';
import { promises as fs } from 'node:fs';
import type * as Fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { buildChangesJson, describeDependenciesChangedAlone, diffSnapshots } from '../../src/evidence/index.js';
import { takeOutsideRecord } from '../../src/evidence/outside-evidence.js';
import { HARNESS_LIMITS } from '../../src/evidence/harness-packages.js';
import type { ChangesJson } from '../../src/domain/changes.js';
import { snap, tempDir, write } from './helpers.js';

// every path the record hands to the file system, and every process started while it is taken
const seen = vi.hoisted(() => ({ paths: [] as string[], processes: 0 }));
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof Fs>();
  const watched = [
    'openSync',
    'readFileSync',
    'lstatSync',
    'statSync',
    'readdirSync',
    'readlinkSync',
    'realpathSync',
    'existsSync',
  ] as const;
  const wrapped: Record<string, unknown> = {};
  for (const name of watched) {
    const fn = real[name] as (...args: unknown[]) => unknown;
    wrapped[name] = (...args: unknown[]) => {
      seen.paths.push(String(args[0]));
      return fn(...args);
    };
  }
  return { ...real, ...wrapped, default: { ...real, ...wrapped } };
});
vi.mock('node:child_process', async (importOriginal) => {
  const real = await importOriginal<typeof ChildProcess>();
  const counted = <F extends (...args: never[]) => unknown>(fn: F) =>
    ((...args: Parameters<F>) => {
      seen.processes++;
      return fn(...args);
    }) as F;
  const wrapped = {
    spawn: counted(real.spawn),
    execFile: counted(real.execFile),
    execFileSync: counted(real.execFileSync),
    spawnSync: counted(real.spawnSync),
  };
  return { ...real, ...wrapped, default: { ...real, ...wrapped } };
});

async function around(ws: string, work: () => Promise<void>): Promise<ChangesJson> {
  const data = await tempDir('gaffer-harness-data-');
  const pre = await snap(ws, data, 'pre');
  await work();
  const post = await snap(ws, data, 'post', { like: pre });
  return buildChangesJson(pre, await diffSnapshots(pre, post), { after: post });
}

/** A framework package with a bin, a dependency of it, and `padding` other packages of 100 files. */
async function nodeWorkspace(padding = 0): Promise<string> {
  const ws = await tempDir('gaffer-harness-ws-');
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'p', scripts: { test: 'checkit test/' } }),
    'package-lock.json': '{}\n',
    'src/a.js': 'a\n',
    // a framework gaffer does not know by name: found through the test script's bin
    'node_modules/checkit/package.json': JSON.stringify({
      name: 'checkit',
      bin: { checkit: 'cli.js' },
      dependencies: { 'deep-eq': '1' },
    }),
    'node_modules/checkit/cli.js': '#!/usr/bin/env node\n',
    'node_modules/checkit/lib/deep/runner.js': 'module.exports = function run() { return failures; };\n',
    'node_modules/deep-eq/package.json': JSON.stringify({ name: 'deep-eq' }),
    'node_modules/deep-eq/lib/index.js': 'module.exports = (a, b) => a === b;\n',
  };
  for (let p = 0; p < padding; p++) {
    for (let f = 0; f < 100; f++)
      files[`node_modules/aa-pad-${String(p).padStart(2, '0')}/lib/f${String(f).padStart(3, '0')}.js`] = 'x';
  }
  await write(ws, files);
  await fs.mkdir(path.join(ws, 'node_modules', '.bin'));
  await fs.symlink('../checkit/cli.js', path.join(ws, 'node_modules', '.bin', 'checkit'));
  return ws;
}

describe('the packages the tests run through', () => {
  it('a same-size edit written in place with its mtime put back, deep in the framework past the sample, is named', async () => {
    const ws = await nodeWorkspace(45);
    const file = path.join(ws, 'node_modules/checkit/lib/deep/runner.js');
    const changes = await around(ws, async () => {
      const st = await fs.stat(file);
      const handle = await fs.open(file, 'r+');
      await handle.write('return 0;       ', 'module.exports = function run() { '.length);
      await handle.close();
      await fs.utimes(file, st.atime, st.mtime);
      expect((await fs.stat(file)).size).toBe(st.size);
    });
    expect(changes.outside_evidence?.dependencies).toEqual(['node_modules/checkit/lib/deep/runner.js (modified)']);
    expect(describeDependenciesChangedAlone(changes.outside_evidence, [])).toBe(
      'dependencies changed without a manifest or lockfile change: node_modules/checkit/lib/deep/runner.js',
    );
    expect(describeDependenciesChangedAlone(changes.outside_evidence, ['package-lock.json'])).toBeNull();
  });

  it('what the framework depends on, a swapped bin link and a file added to the framework are named', async () => {
    const ws = await nodeWorkspace();
    const changes = await around(ws, async () => {
      await write(ws, {
        'node_modules/deep-eq/lib/index.js': 'module.exports = () => true;\n',
        'node_modules/checkit/lib/extra.js': 'x\n',
      });
      await fs.rm(path.join(ws, 'node_modules/.bin/checkit'));
      await fs.symlink('../../evil.sh', path.join(ws, 'node_modules/.bin/checkit'));
    });
    expect(changes.outside_evidence?.dependencies).toEqual([
      'node_modules/.bin/checkit (modified)',
      'node_modules/checkit/lib/extra.js (added)',
      'node_modules/deep-eq/lib/index.js (modified)',
    ]);
  });

  it('a pnpm layout: the link and the folder it leads to inside the workspace; a link out of the workspace is not followed', async () => {
    const ws = await tempDir('gaffer-harness-ws-');
    const outside = await tempDir('gaffer-harness-out-');
    await write(ws, {
      'package.json': JSON.stringify({ scripts: { test: 'mocha' } }),
      'node_modules/.pnpm/mocha@12.0.3/node_modules/mocha/package.json': JSON.stringify({
        name: 'mocha',
        dependencies: { diff: '1' },
      }),
      'node_modules/.pnpm/mocha@12.0.3/node_modules/mocha/lib/runner.js': 'r\n',
      'node_modules/.pnpm/diff@7.0.0/node_modules/diff/index.js': 'd\n',
    });
    await write(outside, { 'jest/secret.txt': 's\n' });
    await fs.symlink('.pnpm/mocha@12.0.3/node_modules/mocha', path.join(ws, 'node_modules/mocha'));
    await fs.symlink(
      '../../diff@7.0.0/node_modules/diff',
      path.join(ws, 'node_modules/.pnpm/mocha@12.0.3/node_modules/diff'),
    );
    await fs.symlink(path.join(outside, 'jest'), path.join(ws, 'node_modules/jest'));
    // a monorepo's own package linked in: the link is recorded, its folder is evidence (the checkpoint's)
    await write(ws, { 'packages/tape/index.js': 'own code\n' });
    await fs.symlink('../packages/tape', path.join(ws, 'node_modules/tape'));
    await write(outside, { 'scope/runner/package.json': '{"dependencies":{"x":"1"}}', 'scope/runner/key.txt': 'k\n' });
    await fs.symlink(path.join(outside, 'scope'), path.join(ws, 'node_modules/@vitest'));
    const record = await takeOutsideRecord({ workspace: ws, label: 'pre', alwaysInclude: [], skipAbs: [] });
    expect(record.harness?.roots).toEqual([
      'node_modules/mocha',
      'node_modules/.pnpm/mocha@12.0.3/node_modules/mocha',
      'node_modules/tape',
      'node_modules/jest',
      'node_modules/.pnpm/mocha@12.0.3/node_modules/diff',
      'node_modules/.pnpm/diff@7.0.0/node_modules/diff',
    ]);
    expect(record.harness?.files['node_modules/jest']).toMatch(/^link:/);
    expect(Object.keys(record.harness?.files ?? {}).some((p) => p.includes('secret') || p.includes('@vitest'))).toBe(
      false,
    );
    const changes = await around(ws, () =>
      write(ws, { 'node_modules/.pnpm/diff@7.0.0/node_modules/diff/index.js': 'patched\n' }),
    );
    expect(changes.outside_evidence?.dependencies).toEqual([
      'node_modules/.pnpm/diff@7.0.0/node_modules/diff/index.js (modified)',
    ]);
  });

  it('a FIFO planted in the framework is recorded by stat, never opened for a read that would block', async () => {
    const ws = await nodeWorkspace();
    const changes = await around(ws, async () => {
      execFileSync('mkfifo', [path.join(ws, 'node_modules/checkit/lib/pipe.js')]);
    });
    expect(changes.outside_evidence?.dependencies).toEqual(['node_modules/checkit/lib/pipe.js (added)']);
  }, 20_000);

  it('a virtualenv: its interpreter link, a .pth start-up hook, pytest itself and a plugin its entry points name', async () => {
    const ws = await tempDir('gaffer-harness-ws-');
    const site = '.venv/lib/python3.12/site-packages';
    await write(ws, {
      'tests/test_a.py': 'def test_a():\n    assert False\n',
      '.venv/pyvenv.cfg': 'home = /usr/bin\n',
      [`${site}/_pytest/assertion/rewrite.py`]: 'def rewrite(): pass\n',
      [`${site}/pytest/__init__.py`]: '',
      [`${site}/quiet_plugin/__init__.py`]: 'def pytest_runtest_makereport(): pass\n',
      [`${site}/quiet_plugin-1.0.dist-info/entry_points.txt`]: '[pytest11]\nquiet = quiet_plugin.hooks\n',
      [`${site}/requests/__init__.py`]: 'x\n',
    });
    await fs.mkdir(path.join(ws, '.venv/bin'), { recursive: true });
    await fs.symlink('/usr/bin/python3', path.join(ws, '.venv/bin/python'));
    const changes = await around(ws, async () => {
      await write(ws, {
        [`${site}/_pytest/assertion/rewrite.py`]: 'def rewrite(): return True\n',
        [`${site}/quiet_plugin/__init__.py`]: 'def pytest_runtest_makereport(): passed()\n',
        [`${site}/zz-evil.pth`]: 'import os; os.environ["X"] = "1"\n',
      });
      await fs.rm(path.join(ws, '.venv/bin/python'));
      await fs.symlink('/bin/true', path.join(ws, '.venv/bin/python'));
    });
    expect(changes.outside_evidence?.dependencies).toEqual([
      '.venv/bin/python (modified)',
      '.venv/lib/python3.12/site-packages/_pytest/assertion/rewrite.py (modified)',
      '.venv/lib/python3.12/site-packages/quiet_plugin/__init__.py (modified)',
      '.venv/lib/python3.12/site-packages/zz-evil.pth (added)',
    ]);
    expect(describeDependenciesChangedAlone(changes.outside_evidence, ['tests/test_a.py'])).toMatch(
      /^dependencies changed without a manifest or lockfile change: \.venv\/bin\/python, /,
    );
  });

  it('the record is bounded: past the file cap the package it falls in is compared in part, the rest left to the sample', async () => {
    const ws = await nodeWorkspace();
    const many: Record<string, string> = {};
    for (let f = 0; f < HARNESS_LIMITS.files + 10; f++)
      many[`node_modules/deep-eq/gen/f${String(f).padStart(5, '0')}.js`] = 'x';
    await write(ws, many);
    const record = await takeOutsideRecord({ workspace: ws, label: 'pre', alwaysInclude: [], skipAbs: [] });
    expect(Object.keys(record.harness?.files ?? {})).toHaveLength(HARNESS_LIMITS.files);
    expect(record.harness?.cut).toBe('node_modules/deep-eq');
  }, 60_000);

  it('a workspace without a dependency folder pays nothing: no manifest read, no lookup for one, no process', async () => {
    const ws = await tempDir('gaffer-harness-ws-');
    await write(ws, {
      'package.json': JSON.stringify({ scripts: { test: 'mocha' } }),
      'src/a.js': 'a\n',
      'build/out.js': 'o\n',
    });
    seen.paths.length = 0;
    seen.processes = 0;
    const record = await takeOutsideRecord({ workspace: ws, label: 'pre', alwaysInclude: [], skipAbs: [] });
    expect(record.harness).toBeUndefined();
    expect(seen.processes).toBe(0);
    expect(seen.paths.filter((p) => /package\.json|node_modules|venv|site-packages|\.bin/.test(p))).toEqual([]);
    // the record itself did look at the workspace (its git dir, editor configs, build/)
    expect(seen.paths).toContain(path.join(ws, 'build'));
  });
});
