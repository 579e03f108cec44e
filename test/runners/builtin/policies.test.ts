import { describe, expect, it } from 'vitest';
import {
  isPinnedModel,
  isSameModel,
  modelFamily,
  substitutionError,
} from '../../../src/runners/builtin/attestation.js';
import { FileLocks } from '../../../src/runners/builtin/file-locks.js';
import { checkWrite, writeScopeFor } from '../../../src/runners/builtin/write-scope.js';

describe('write scope by role (spec 06)', () => {
  it('an implementer with no files may write anything in the workspace but .git', () => {
    const scope = writeScopeFor('worker', []);
    expect(scope.allowed).toBeNull();
    expect(checkWrite(scope, 'src/deep/new.ts')).toEqual({ ok: true });
    expect(checkWrite(scope, '.git/config')).toMatchObject({ ok: false, why: expect.stringContaining('.git') });
  });

  it('an implementer with files may write those, paths under a named directory, globs and its outputs — nothing else', () => {
    const scope = writeScopeFor(
      'worker',
      ['src/api.ts', 'docs/', 'test/**/*.test.ts', 'out/report.md'],
      ['out/report.md'],
    );
    for (const ok of ['src/api.ts', 'docs/a/b.md', 'test/unit/x.test.ts', 'test/x.test.ts', 'out/report.md'])
      expect(checkWrite(scope, ok)).toEqual({ ok: true });
    for (const bad of ['src/other.ts', 'README.md', 'src/api.ts.bak', 'docsx/a.md', 'test/helper.ts']) {
      const check = checkWrite(scope, bad);
      expect(check).toMatchObject({
        ok: false,
        why: expect.stringContaining(`${bad} is outside your write scope: an implementer may write only src/api.ts`),
      });
    }
  });

  it('an implementer whose task names only outputs may write anything (no files named)', () => {
    expect(writeScopeFor('worker', ['report.md'], ['report.md']).allowed).toBeNull();
  });

  it("a fixer writes the implementers' union; empty means anything", () => {
    expect(checkWrite(writeScopeFor('fixer', ['src/a.ts', 'src/b.ts']), 'src/b.ts')).toEqual({ ok: true });
    expect(checkWrite(writeScopeFor('fixer', ['src/a.ts']), 'src/c.ts')).toMatchObject({
      ok: false,
      why: expect.stringContaining('a fixer may write only src/a.ts'),
    });
    expect(writeScopeFor('fixer', []).allowed).toBeNull();
  });

  it('a reviewer writes nothing but its own outputs', () => {
    const scope = writeScopeFor('reviewer', ['src/a.ts', 'review.md'], ['review.md']);
    expect(checkWrite(scope, 'review.md')).toEqual({ ok: true });
    expect(checkWrite(scope, 'src/a.ts')).toMatchObject({ ok: false });
    expect(checkWrite(writeScopeFor('reviewer', ['src/a.ts']), 'src/a.ts')).toMatchObject({
      ok: false,
      why: expect.stringContaining('a reviewer may write nothing in the project'),
    });
  });
});

describe('file locks', () => {
  it('the first writer holds a file; another is refused with the holder named; release frees it', () => {
    const locks = new FileLocks();
    const a = { id: 'job/a/1/x', name: 'worker-a' };
    const b = { id: 'job/b/1/y', name: 'worker-b' };
    expect(locks.acquire('/ws/f.txt', a)).toEqual({ ok: true });
    expect(locks.acquire('/ws/f.txt', a)).toEqual({ ok: true });
    expect(locks.acquire('/ws/f.txt', b)).toEqual({ ok: false, holder: 'worker-a' });
    expect(locks.acquire('/ws/g.txt', b)).toEqual({ ok: true });
    expect(locks.releaseAll(a.id)).toBe(1);
    expect(locks.holderOf('/ws/f.txt')).toBeNull();
    expect(locks.acquire('/ws/f.txt', b)).toEqual({ ok: true });
  });

  it('two runs with the same worker name are different holders', () => {
    const locks = new FileLocks();
    expect(locks.acquire('/ws/f', { id: 'job-1/worker-1/1/a', name: 'worker-1' })).toEqual({ ok: true });
    expect(locks.acquire('/ws/f', { id: 'job-2/worker-1/1/b', name: 'worker-1' })).toEqual({
      ok: false,
      holder: 'worker-1',
    });
  });
});

describe('model attestation', () => {
  it.each([
    ['claude-sonnet-4-20250514', 'claude-sonnet-4-20250514'],
    ['claude-sonnet-4-latest', 'claude-sonnet-4-20250514'],
    ['claude-sonnet-4-0', 'claude-sonnet-4-20250514'],
    ['claude-opus-4-1', 'claude-opus-4-1-20250805'],
    ['gpt-4o', 'gpt-4o-2024-08-06'],
    ['qwen3', 'qwen3:latest'],
    ['qwen3', 'qwen3:8b'],
    ['qwen3:8b', 'qwen3:8b'],
    ['qwen3:8b', 'qwen3:8b-q4_K_M'],
    ['qwen3:latest', 'qwen3:32b'],
    ['Qwen3-Coder', 'qwen3-coder'],
  ])('%s is attested by %s', (selected, served) => {
    expect(isSameModel(selected, served)).toBe(true);
  });

  it.each([
    ['claude-sonnet-4-20250514', 'claude-sonnet-4-20250929'],
    ['claude-sonnet-4-20250514', 'claude-sonnet-4'],
    ['claude-sonnet-4-latest', 'claude-3-5-haiku-20241022'],
    ['gpt-4o', 'gpt-4o-mini'],
    ['gpt-4o-2024-08-06', 'gpt-4o-2024-05-13'],
    ['qwen3:8b', 'qwen3:32b'],
    ['qwen3:8b', 'llama3:8b'],
    ['qwen3', 'qwen2.5'],
  ])('%s is NOT attested by %s', (selected, served) => {
    expect(isSameModel(selected, served)).toBe(false);
  });

  it('knows pins from aliases and says the exact error', () => {
    expect(isPinnedModel('claude-sonnet-4-20250514')).toBe(true);
    expect(isPinnedModel('gpt-4-0613')).toBe(true);
    expect(isPinnedModel('claude-sonnet-4-latest')).toBe(false);
    expect(isPinnedModel('qwen3:8b')).toBe(false);
    expect(modelFamily('claude-sonnet-4-latest')).toEqual({ family: 'claude-sonnet-4', tag: null });
    expect(modelFamily('qwen3:8b')).toEqual({ family: 'qwen3', tag: '8b' });
    expect(substitutionError('other')).toBe('served model differs from selected model: other');
  });
});
