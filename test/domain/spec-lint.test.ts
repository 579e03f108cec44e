import { describe, expect, it } from 'vitest';
import type { TaskSpec, VerifySpec } from '../../src/domain/request.js';
import { lintJob } from '../../src/domain/spec-lint.js';

const task = (instruction: string, criteria: string[] = [], extra: Partial<TaskSpec> = {}): TaskSpec => ({
  name: 'worker-1',
  instruction,
  files: ['src/api.ts'],
  type: 'implement',
  runner: 'shell',
  model: null,
  criteria,
  outputs: [],
  command: 'true',
  tests_may_change: false,
  ...extra,
});
const lint = (t: TaskSpec, verify: VerifySpec = { mode: 'auto' }) =>
  lintJob({ tasks: [t], verify, criteria: [] }, 'warn');
const codes = (t: TaskSpec, verify?: VerifySpec) => lint(t, verify).codes;

describe('spec lint and task criteria', () => {
  it('criteria gaffer cannot check do not silence no_verify or vague_verb', () => {
    const vague = task('Refactor the date parsing in src/dates.ts', ['the code is cleaner', 'it is faster']);
    expect(codes(vague)).toEqual(expect.arrayContaining(['no_verify', 'vague_verb']));
    const report = lint(vague);
    const finding = (code: string) => report.needs_detail.find((f) => f.code === code);
    expect(finding('vague_verb')?.message).toBe('"refactor" with no criteria gaffer can check');
    // the fix says which forms are checked
    expect(finding('vague_verb')?.fix).toContain('"`npm run lint` passes"');
    expect(finding('no_verify')?.fix).toContain('"src/api.ts must not change"');
  });

  it('a checked criterion silences them: a command, "tests pass", a file that must contain a literal', () => {
    for (const criterion of [
      '`npm run lint` passes',
      'tests pass',
      'src/dates.ts contains `parseIso`',
      'command: make check',
    ]) {
      expect(codes(task('Refactor the date parsing in src/dates.ts', [criterion]))).toEqual([]);
    }
  });

  it('a "must not change" guard answers vague_verb and public_api_unguarded, but proves nothing: no_verify stays', () => {
    const t = task('Refactor the exported helpers in src/api.ts', ['src/api.ts must not change']);
    expect(codes(t)).toEqual(['no_verify']);
    expect(codes(task('Refactor the exported helpers in src/api.ts'))).toEqual(
      expect.arrayContaining(['no_verify', 'vague_verb', 'public_api_unguarded']),
    );
  });

  it('an explicit verify command still satisfies no_verify whatever the criteria', () => {
    expect(
      codes(task('Fix the date parsing in src/dates.ts for leap years', ['it works']), {
        mode: 'command',
        command: 'npm test',
      }),
    ).toEqual([]);
  });
});
