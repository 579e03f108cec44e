import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
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
    expect(read.found === 'content' ? [read.mode, read.content.toString('utf8')] : read).toEqual(['100644', '{"objectives": []}\n']);
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
    expect(read.found === 'content' ? [read.mode, read.content.toString('utf8')] : read).toEqual(['120000', '../secret.txt']);
    const mtime = await snap(ws, data, 'mtime', { jobId: 'job2', forceMtime: true, alwaysInclude });
    expect(await readCheckpointFile(mtime, '.gaffer/objectives.json')).toEqual({ found: 'stat-only' });
  });
});
