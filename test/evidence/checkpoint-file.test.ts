import { chmodSync, promises as fs, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readCheckpointFile } from '../../src/evidence/checkpoint-file.js';
import { git, snap, tempDir, write } from './helpers.js';

// spec 07 reads the objectives file from the checkpoint: one file as the shadow commit holds it.

describe('reading one file from a checkpoint', () => {
  it('gives the content the checkpoint recorded, not what the workspace holds later; an ignored file named always-include is there', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    git(ws, 'init', '-q');
    await write(ws, { '.gitignore': '.gaffer/\n', '.gaffer/objectives.json': '{"objectives": []}\n', 'a.txt': 'a\n' });
    const pre = await snap(ws, data, 'pre', { alwaysInclude: ['.gaffer/objectives.json'] });
    await write(ws, { '.gaffer/objectives.json': 'changed by a worker\n' });

    const read = await readCheckpointFile(pre, '.gaffer/objectives.json');
    expect(read.found === 'content' ? [read.mode, read.content.toString('utf8')] : read).toEqual([
      '100644',
      '{"objectives": []}\n',
    ]);
    expect(await readCheckpointFile(pre, 'missing.json')).toEqual({ found: 'absent' });
    expect(await readCheckpointFile(pre, '../outside.json')).toEqual({ found: 'absent' });
    // not named: an ignored file (and anything under `.gaffer/`) is not in the checkpoint
    const plain = await snap(ws, data, 'plain');
    expect(await readCheckpointFile(plain, '.gaffer/objectives.json')).toEqual({ found: 'absent' });
  });

  it('a symlink is its target path (mode 120000), never the file it points at; an mtime snapshot holds no content', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'secret.txt': 'secret\n' });
    await fs.mkdir(path.join(ws, '.gaffer'));
    await fs.symlink('../secret.txt', path.join(ws, '.gaffer', 'objectives.json'));
    // `.gaffer/` is left out of every walk: the engine names the file it reads
    const alwaysInclude = ['.gaffer/objectives.json'];
    const pre = await snap(ws, data, 'pre', { alwaysInclude });
    const read = await readCheckpointFile(pre, '.gaffer/objectives.json');
    expect(read.found === 'content' ? [read.mode, read.content.toString('utf8')] : read).toEqual([
      '120000',
      '../secret.txt',
    ]);
    const mtime = await snap(ws, data, 'mtime', { jobId: 'job2', forceMtime: true, alwaysInclude });
    expect(await readCheckpointFile(mtime, '.gaffer/objectives.json')).toEqual({ found: 'stat-only' });
  });

  const savedPath = process.env.PATH;
  afterEach(() => {
    process.env.PATH = savedPath;
  });

  it('a file the checkpoint just taken does not hold is absent without a git process; one it holds is read by git, by content', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n', '.gaffer/objectives.json': '{"objectives": []}\n' });
    const pre = await snap(ws, data, 'pre', { alwaysInclude: ['.gaffer/objectives.json'] });
    // every git call from here on is logged by a git first on PATH
    const bin = await tempDir('gaffer-bin-');
    const log = path.join(bin, 'calls.log');
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    writeFileSync(path.join(bin, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${realGit}' "$@"\n`);
    chmodSync(path.join(bin, 'git'), 0o755);
    writeFileSync(log, '');
    process.env.PATH = `${bin}:${savedPath ?? ''}`;

    expect(await readCheckpointFile(pre, 'missing.json')).toEqual({ found: 'absent' });
    expect(await readCheckpointFile(pre, '.gaffer/missing.json')).toEqual({ found: 'absent' });
    expect(readFileSync(log, 'utf8')).toBe('');
    const read = await readCheckpointFile(pre, '.gaffer/objectives.json');
    expect(read.found === 'content' ? read.content.toString('utf8') : read).toBe('{"objectives": []}\n');
    expect(readFileSync(log, 'utf8')).toContain('ls-tree');
    // a later checkpoint of the repository: the earlier one's paths are asked of git again, and still right
    await write(ws, { 'b.txt': 'b\n' });
    const post = await snap(ws, data, 'post', { like: pre });
    writeFileSync(log, '');
    expect(await readCheckpointFile(pre, 'b.txt')).toEqual({ found: 'absent' });
    expect(readFileSync(log, 'utf8')).toContain('ls-tree');
    expect(await readCheckpointFile(post, 'b.txt')).toMatchObject({ found: 'content' });
  });
});
