import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { blankReport } from '../../src/runners/report.js';
import { captureOutputs, checkOutput, settleByArtifacts } from '../../src/verification/outputs.js';
import { makeWorkspace } from '../helpers/temp.js';

const exited = (code: number) =>
  blankReport({
    status: code === 0 ? 'done' : 'error',
    outcome: code === 0 ? 'success' : 'expected_error',
    stopReason: code === 0 ? 'complete' : 'exit_nonzero',
    error: code === 0 ? null : `exit code ${code}: boom`,
    exitCode: code,
    summary: 'wrote it\nboom',
  });

describe('declared outputs', () => {
  it('an output counts as written only when it exists, is not empty, parses by its extension, and differs from the checkpoint', () => {
    const ws = makeWorkspace({ 'reports/same.md': 'old\n', 'reports/changed.md': 'old\n' });
    const paths = [
      'reports/missing.md',
      'reports/same.md',
      'reports/changed.md',
      'out/empty.txt',
      'out/bad.json',
      'out/ok.json',
      'out/ok.yaml',
      'out/bad.toml',
      'out/dir',
    ];
    const before = captureOutputs(ws, paths);
    expect(before['reports/same.md']).toMatchObject({ exists: true, isDirectory: false, size: 4 });
    expect(before['reports/missing.md']?.exists).toBe(false);
    writeFileSync(join(ws, 'reports/changed.md'), 'new\n');
    mkdirSync(join(ws, 'out/dir'), { recursive: true });
    writeFileSync(join(ws, 'out/empty.txt'), '\n');
    writeFileSync(join(ws, 'out/bad.json'), '{"a":');
    writeFileSync(join(ws, 'out/ok.json'), '{"a": 1}');
    writeFileSync(join(ws, 'out/ok.yaml'), 'a: 1\n');
    writeFileSync(join(ws, 'out/bad.toml'), 'a = \n');
    const why = (p: string) => checkOutput(ws, p, before[p]);
    expect(why('reports/missing.md')).toBe('declared output reports/missing.md was never written');
    expect(why('reports/same.md')).toBe(
      'declared output reports/same.md was never written (it is as it was at the checkpoint)',
    );
    expect(why('reports/changed.md')).toBeNull();
    expect(why('out/empty.txt')).toBe('declared output out/empty.txt is empty');
    expect(why('out/bad.json')).toMatch(/^declared output out\/bad\.json is not valid JSON: /);
    expect(why('out/ok.json')).toBeNull();
    expect(why('out/ok.yaml')).toBeNull();
    expect(why('out/bad.toml')).toMatch(/^declared output out\/bad\.toml is not valid TOML: /);
    expect(why('out/dir')).toBe('declared output out/dir is an empty folder');
    writeFileSync(join(ws, 'out/dir/a.txt'), 'a');
    expect(why('out/dir')).toBeNull();
  });

  it('a clean exit without its outputs is not done; a failed exit with every output complete is done with a note', () => {
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const before = captureOutputs(ws, ['out/r.json']);
    const missing = settleByArtifacts(exited(0), ws, ['out/r.json'], before);
    expect(missing).toMatchObject({
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'outputs_missing',
      error: 'declared output out/r.json was never written',
    });
    // a failed exit without the outputs stays as it was
    expect(settleByArtifacts(exited(1), ws, ['out/r.json'], before)).toEqual(exited(1));

    mkdirSync(join(ws, 'out'));
    writeFileSync(join(ws, 'out/r.json'), '{"ok": true}');
    const settled = settleByArtifacts(exited(1), ws, ['out/r.json'], before);
    expect(settled).toMatchObject({
      status: 'done',
      outcome: 'success',
      stopReason: 'exit_nonzero',
      exitCode: 1,
      error: null,
    });
    expect(settled.summary).toBe(
      'wrote it\nboom\nthe process failed (exit code 1: boom), but every declared output is written and passes its checks: out/r.json',
    );
    // a timeout is never settled by its artifacts
    const timedOut = { ...exited(1), status: 'timeout' as const, stopReason: 'timeout' };
    expect(settleByArtifacts(timedOut, ws, ['out/r.json'], before)).toEqual(timedOut);
  });
});
