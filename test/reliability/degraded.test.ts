import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';
import { BIN } from './helpers.js';

/** Tools the workers and verification here use; git is deliberately not among them. */
const TOOLS = [
  'sh',
  'bash',
  'sed',
  'cat',
  'ls',
  'env',
  'sleep',
  'mkdir',
  'rm',
  'cp',
  'mv',
  'true',
  'false',
  'grep',
  'head',
  'tail',
  'wc',
  'printf',
  'dirname',
  'bwrap',
];

/** A PATH with node and the ordinary tools but no git. */
function pathWithoutGit(): string {
  const bin = join(tempDir('gaffer-nogit-'), 'bin');
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, 'node'));
  for (const tool of TOOLS) {
    const found = ['/usr/local/bin', '/usr/bin', '/bin'].map((d) => join(d, tool)).find((p) => existsSync(p));
    if (found) symlinkSync(found, join(bin, tool));
  }
  return bin;
}

/**
 * The bin dir lives under /tmp, which the bwrap sandbox replaces with an empty tmpfs: the no-git
 * runs go unsandboxed so their PATH stays visible to the worker and the verification.
 */
function gaffer(dataDir: string, args: string[], path: string, env: Record<string, string> = {}) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, PATH: path, GAFFER_URL: '', ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('degraded: a whole job through bin/gaffer', () => {
  it('with no git on PATH completes on mtime evidence, the proof says so, and the verdict still counts the changed files', async () => {
    const path = pathWithoutGit();
    expect(spawnSync('sh', ['-c', 'command -v git'], { env: { PATH: path } }).status).not.toBe(0);
    const data = join(tempDir(), 'data');
    // a git repo, too: without git on PATH it cannot be read as one
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const r = gaffer(
      data,
      [
        '--json',
        'dispatch',
        '--workspace',
        ws,
        '--verify',
        'node --test test/',
        '--task',
        'fix add',
        '--command',
        `${FIX_ADD}; echo x > notes.txt`,
        '--files',
        'src/math.js',
        '--files',
        'notes.txt',
      ],
      path,
      { GAFFER_SANDBOX: 'off' },
    );
    expect(r.stderr).not.toContain('Error');
    expect(r.code).toBe(0);
    const job = JSON.parse(r.stdout);
    expect(job.status).toBe('done');
    expect(job.result.changes).toMatchObject({
      source: 'mtime',
      modified: ['src/math.js'],
      added: ['notes.txt'],
      count: 2,
    });
    expect(job.result.verification).toMatchObject({ ran: true, ok: true });
    expect(job.result.proof.uncertainty).toEqual(
      expect.arrayContaining([expect.objectContaining({ code: 'mtime_evidence' })]),
    );
    expect(job.result.proof.confidence).toBeLessThan(1);
    expect(job.verdict).toContain('2 files changed on disk');

    // the diff of a changed file says its content was not recorded
    const engine = await Engine.open({ dataDir: data });
    try {
      expect(await engine.diff(job.id, 'src/math.js')).toBe(
        'src/math.js: content not recorded (mtime evidence): size 97 -> 97\n',
      );
    } finally {
      await engine.close();
    }
  });

  // issue 10 (over spec 10's "inconclusive, not failed"): a command that cannot start is an error the
  // verdict names first — not a failure of the work, and not a quiet `done` either
  it('a verification command that does not exist is named first; not failed, not done', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const r = gaffer(
      data,
      [
        '--json',
        'dispatch',
        '--workspace',
        ws,
        '--verify',
        'no-such-tool --run',
        '--task',
        'edit',
        '--command',
        'echo b >> a.txt',
      ],
      process.env.PATH ?? '',
    );
    expect(r.code).toBe(1);
    const job = JSON.parse(r.stdout);
    expect(job.status).toBe('partial');
    expect(job.result.verification).toMatchObject({
      ran: true,
      ok: null,
      inconclusive: true,
      blocking: false,
      could_not_start: true,
    });
    expect(job.result.proof.verdict).toBe('unproved');
    expect(job.result.proof.uncertainty).toEqual(
      expect.arrayContaining([expect.objectContaining({ code: 'verification_could_not_start' })]),
    );
    expect(job.verdict).toMatch(/^verification could not start: the command could not run \(exit 127\)/);
  });
});
