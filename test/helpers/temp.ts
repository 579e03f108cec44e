import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temp dir (symlink-free path), removed after the file's tests. */
export function tempDir(prefix = 'gaffer-test-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

/** Writes files (path → content) under `root`. */
export function writeFiles(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

/** A workspace with files, optionally a git repo with one commit. */
export function makeWorkspace(files: Record<string, string>, opts: { git?: boolean } = {}): string {
  const ws = join(tempDir('gaffer-ws-'), 'ws');
  mkdirSync(ws);
  writeFiles(ws, files);
  if (opts.git) {
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: ws, stdio: 'ignore' });
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-q', '-m', 'init');
  }
  return ws;
}

/** The calc example: `npm test` (node --test) fails until add() adds. */
export const CALC_FILES: Record<string, string> = {
  'package.json': JSON.stringify({
    name: 'calc',
    private: true,
    type: 'module',
    scripts: { test: 'node --test test/' },
  }),
  'src/math.js':
    'export function add(a, b) {\n  return a - b;\n}\nexport function multiply(a, b) {\n  return a * b;\n}\n',
  'test/math.test.js':
    "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add, multiply } from '../src/math.js';\n" +
    "test('add adds', () => assert.equal(add(2, 3), 5));\ntest('multiply multiplies', () => assert.equal(multiply(2, 3), 6));\n",
};

export const FIX_ADD = "sed -i 's/return a - b;/return a + b;/' src/math.js";
