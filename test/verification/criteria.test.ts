import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCriterion } from '../../src/domain/criterion-forms.js';
import type { VerificationJson } from '../../src/domain/result.js';
import type { ChangeSet } from '../../src/evidence/types.js';
import { checkCriteria, checkJobCriteria, type CriteriaInput } from '../../src/verification/criteria.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const verification = (ok: boolean | null, ran = true) =>
  ({
    ok,
    ran,
    inconclusive: ran && ok === null,
    summary: ok === false ? '1 failed, 3 passed' : '',
  }) as VerificationJson;
const changes = (modified: string[] = [], added: string[] = [], deleted: string[] = []): ChangeSet => ({
  added,
  modified,
  deleted,
});

function check(workspace: string, criteria: string[], extra: Partial<CriteriaInput> = {}) {
  return checkCriteria({
    criteria,
    changeSet: changes(),
    verification: null,
    workspace,
    sandbox: false,
    timeoutS: 30,
    signal: new AbortController().signal,
    workDir: join(tempDir('gaffer-crit-logs-'), 'logs'),
    ...extra,
  });
}

describe('criterion forms', () => {
  it.each([
    ['`npm run lint` passes', { kind: 'command', command: 'npm run lint' }],
    ['`node scripts/check.js` exits 0', { kind: 'command', command: 'node scripts/check.js' }],
    ['`make check` must pass.', { kind: 'command', command: 'make check' }],
    ['command: make check', { kind: 'command', command: 'make check' }],
    ['Command: `npm test -- api`', { kind: 'command', command: 'npm test -- api' }],
    ['npm run lint passes', { kind: 'command', command: 'npm run lint' }],
    ['src/api.ts must change', { kind: 'changes', paths: ['src/api.ts'] }],
    ['src/api.ts changes', { kind: 'changes', paths: ['src/api.ts'] }],
    ['docs/api.md is updated', { kind: 'changes', paths: ['docs/api.md'] }],
    ['update docs/api.md and README.md', { kind: 'changes', paths: ['docs/api.md', 'README.md'] }],
    ['src/api.ts must not change', { kind: 'unchanged', paths: ['src/api.ts'] }],
    ["don't touch src/legacy/", { kind: 'unchanged', paths: ['src/legacy/'] }],
    [
      'do not touch the files src/a.ts, src/b.ts and package.json',
      { kind: 'unchanged', paths: ['src/a.ts', 'src/b.ts', 'package.json'] },
    ],
    ['`src/api.ts` unchanged', { kind: 'unchanged', paths: ['src/api.ts'] }],
    ['Makefile is not to be modified', { kind: 'unchanged', paths: ['Makefile'] }],
    ['README.md contains `--json`', { kind: 'contains', path: 'README.md', text: '--json', negated: false }],
    ['src/config.ts mentions "API_URL"', { kind: 'contains', path: 'src/config.ts', text: 'API_URL', negated: false }],
    [
      'src/config.ts does not contain API_KEY',
      { kind: 'contains', path: 'src/config.ts', text: 'API_KEY', negated: true },
    ],
    ['reports/audit.json exists', { kind: 'exists', paths: ['reports/audit.json'], created: false }],
    ['reports/audit.md is created', { kind: 'exists', paths: ['reports/audit.md'], created: true }],
    ['src/old.js is deleted', { kind: 'absent', paths: ['src/old.js'] }],
    ['out/report.json is valid JSON', { kind: 'parses', path: 'out/report.json', format: 'json' }],
    ['config.yml parses', { kind: 'parses', path: 'config.yml', format: null }],
    ['tests pass', { kind: 'tests_pass' }],
    ['All tests pass.', { kind: 'tests_pass' }],
    ['the test suite passes', { kind: 'tests_pass' }],
  ])('reads "%s"', (text, form) => {
    expect(parseCriterion(text)).toEqual(form);
  });

  it.each([
    'the code is clean',
    'the parser handles ISO dates',
    'the parser must not change', // prose subject, not a path
    '`parseDate` passes the tests', // a sentence about a function, not "command passes"
    'make sure the build succeeds',
    'go tests pass',
    'tests pass on Windows',
    'integration tests pass', // the verification may not be them
    'README.md contains a usage section', // prose, not a literal
    'README.md mentions gaffer',
    'src/a.ts contains `x` and src/b.ts contains `y`',
    'v1.2 must not change', // a version, not a path
    'and/or input must change',
    'users can log in',
  ])('leaves "%s" unrecognized', (text) => {
    expect(parseCriterion(text)).toBeNull();
  });
});

describe('criteria checked against the workspace, the change set and the verification', () => {
  it('"must not change" is unmet when the path changed and met when it did not — never met because it is named', async () => {
    const ws = makeWorkspace({ 'src/api.ts': 'export const a = 1;\n', 'src/other.ts': 'x' });
    const changed = await check(ws, ['src/api.ts must not change'], { changeSet: changes(['src/api.ts']) });
    expect(changed).toMatchObject({ complete: false, met: [], unmet: ['src/api.ts must not change'], unchecked: [] });
    expect(changed.details).toEqual([
      { criterion: 'src/api.ts must not change', check: 'unchanged', why: 'src/api.ts changed' },
    ]);
    const untouched = await check(ws, ['src/api.ts must not change', 'src/api.ts changes'], {
      changeSet: changes(['src/other.ts']),
    });
    expect(untouched).toMatchObject({ met: ['src/api.ts must not change'], unmet: ['src/api.ts changes'] });
  });

  it('a path matches itself or a folder prefix, never a suffix of a longer path', async () => {
    const ws = makeWorkspace({ 'src/api.ts': 'x', 'src/api/handler.ts': 'y', 'docs/guide.md': 'z' });
    const c = await check(ws, ['docs/ updated', 'src/api changes', 'api/handler.ts changes'], {
      changeSet: changes(['docs/guide.md', 'src/api.ts']),
    });
    expect(c.met).toEqual(['docs/ updated']);
    // src/api.ts changed, but the folder src/api/ did not; "api/handler.ts" is not "src/api/handler.ts"
    expect(c.unmet).toEqual(['src/api changes', 'api/handler.ts changes']);
    const nested = await check(ws, ['api/handler.ts changes', 'handler.ts/ changes'], {
      changeSet: changes(['src/api/handler.ts']),
    });
    expect(nested.unmet).toEqual(['api/handler.ts changes', 'handler.ts/ changes']);
  });

  it('a bare file name counts only when one file of that name exists; several make it unchecked unless none of them changed', async () => {
    const one = makeWorkspace({ 'src/api.ts': 'x', 'src/b.ts': 'y' });
    expect((await check(one, ['api.ts changes'], { changeSet: changes(['src/api.ts']) })).met).toEqual([
      'api.ts changes',
    ]);
    expect((await check(one, ['api.ts must not change'], { changeSet: changes(['src/api.ts']) })).unmet).toEqual([
      'api.ts must not change',
    ]);

    const two = makeWorkspace({ 'src/api.ts': 'x', 'lib/api.ts': 'y', 'src/b.ts': 'z' });
    const ambiguous = await check(two, ['api.ts must not change'], { changeSet: changes(['src/api.ts']) });
    expect(ambiguous.unchecked).toEqual(['api.ts must not change']);
    expect(ambiguous.details?.[0]?.why).toContain('2 files are named api.ts');
    // neither api.ts changed: whichever was meant, it is unchanged
    expect((await check(two, ['api.ts must not change'], { changeSet: changes(['src/b.ts']) })).met).toEqual([
      'api.ts must not change',
    ]);
  });

  it('"must not change" on a path that does not exist is unchecked, not met by accident', async () => {
    const ws = makeWorkspace({ 'src/api.ts': 'x' });
    const c = await check(ws, ['lib/api.ts must not change'], { changeSet: changes(['src/api.ts']) });
    expect(c.unchecked).toEqual(['lib/api.ts must not change']);
    expect(c.details?.[0]?.why).toContain('no such path');
  });

  it('"contains" reads the file as it is now; prose is not a literal', async () => {
    const ws = makeWorkspace({
      'README.md': 'Use `gaffer status --json` to read it.\n',
      'src/config.ts': 'export const API_URL = "x";\n',
    });
    const c = await check(ws, [
      'README.md contains `--json`',
      'README.md mentions "--yaml"',
      'src/config.ts does not contain API_KEY',
      'src/config.ts does not contain API_URL',
      'docs/missing.md contains `x`',
      'README.md contains a usage section',
    ]);
    expect(c.met).toEqual(['README.md contains `--json`', 'src/config.ts does not contain API_KEY']);
    expect(c.unmet).toEqual([
      'README.md mentions "--yaml"',
      'src/config.ts does not contain API_URL',
      'docs/missing.md contains `x`',
    ]);
    expect(c.unchecked).toEqual(['README.md contains a usage section']);
    expect(c.details?.find((d) => d.criterion.startsWith('docs/'))?.why).toBe('docs/missing.md does not exist');
  });

  it('"exists", "is created" and "does not exist" look at the disk and at what the workers wrote', async () => {
    const ws = makeWorkspace({ 'reports/audit.md': '# audit\n', 'old.md': 'was here' });
    const c = await check(
      ws,
      [
        'reports/audit.md exists',
        'reports/audit.md is created',
        'old.md is created',
        'reports/other.md exists',
        'src/gone.js does not exist',
        'old.md is deleted',
      ],
      {
        changeSet: changes([], ['reports/audit.md'], ['src/gone.js']),
      },
    );
    expect(c.met).toEqual(['reports/audit.md exists', 'reports/audit.md is created', 'src/gone.js does not exist']);
    expect(c.unmet).toEqual(['old.md is created', 'reports/other.md exists', 'old.md is deleted']);
    expect(c.details?.find((d) => d.criterion === 'old.md is created')?.why).toBe(
      'old.md was already there and the workers did not write it',
    );
  });

  it('a file "parses" by its extension (json, yaml, toml) or by the format named; empty never parses', async () => {
    const ws = makeWorkspace({
      'out/ok.json': '{"a": 1}',
      'out/bad.json': '{"a": 1,',
      'out/empty.json': '  \n',
      'conf/ok.yaml': 'a: 1\nb: [1, 2]\n',
      'conf/bad.yaml': 'a: [1, 2\n',
      'conf/ok.toml': '[tool]\nname = "x"\n',
      'conf/bad.toml': '[tool\nname = "x"\n',
      'notes.md': 'hi',
    });
    const c = await check(ws, [
      'out/ok.json is valid JSON',
      'out/bad.json parses',
      'out/empty.json parses',
      'conf/ok.yaml parses',
      'conf/bad.yaml parses',
      'conf/ok.toml parses',
      'conf/bad.toml is valid TOML',
      'notes.md parses',
    ]);
    expect(c.met).toEqual(['out/ok.json is valid JSON', 'conf/ok.yaml parses', 'conf/ok.toml parses']);
    expect(c.unmet).toEqual([
      'out/bad.json parses',
      'out/empty.json parses',
      'conf/bad.yaml parses',
      'conf/bad.toml is valid TOML',
    ]);
    expect(c.unchecked).toEqual(['notes.md parses']);
    const why = (k: string) => c.details?.find((d) => d.criterion === k)?.why;
    expect(why('out/bad.json parses')).toMatch(/^out\/bad\.json is not valid JSON: /);
    expect(why('out/empty.json parses')).toBe('out/empty.json is empty');
  });

  it('a command criterion runs in the workspace through sh -c: exit 0 is met, anything else unmet with the reason', async () => {
    const ws = makeWorkspace({
      'marker.txt': 'here',
      'scripts/check.js': "console.log('checking'); console.error('2 problems'); process.exit(3);\n",
    });
    const c = await check(ws, [
      '`test -f marker.txt && echo ok` passes',
      '`node scripts/check.js` exits 0',
      'command: exit 0',
      'command: no-such-tool-xyz --check',
    ]);
    expect(c.met).toEqual(['`test -f marker.txt && echo ok` passes', 'command: exit 0']);
    expect(c.unmet).toEqual(['`node scripts/check.js` exits 0', 'command: no-such-tool-xyz --check']);
    const why = (k: string) => c.details?.find((d) => d.criterion === k)?.why;
    expect(why('`node scripts/check.js` exits 0')).toBe('exit 3: 2 problems');
    expect(why('command: no-such-tool-xyz --check')).toMatch(/^exit 127 \(command not found\)/);
  });

  it('a command criterion that outlives its timeout is killed and unmet; a cancelled job leaves it unchecked', async () => {
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const started = Date.now();
    const slow = await check(ws, ['command: sleep 30'], { timeoutS: 1 });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(slow.unmet).toEqual(['command: sleep 30']);
    expect(slow.details?.[0]?.why).toBe('timed out after 1 s');

    const abort = new AbortController();
    setTimeout(() => abort.abort(), 300);
    const cancelled = await check(ws, ['command: sleep 30'], { signal: abort.signal });
    expect(cancelled.unchecked).toEqual(['command: sleep 30']);
  });

  it('"tests pass" is met only by a conclusive pass; a failure is unmet, inconclusive or none unchecked', async () => {
    const ws = makeWorkspace({ 'a.txt': 'a' });
    expect((await check(ws, ['tests pass'], { verification: verification(true) })).met).toEqual(['tests pass']);
    const failed = await check(ws, ['all tests pass'], { verification: verification(false) });
    expect(failed.unmet).toEqual(['all tests pass']);
    expect(failed.details?.[0]?.why).toBe('verification failed: 1 failed, 3 passed');
    expect((await check(ws, ['all tests pass'], { verification: verification(null) })).unchecked).toEqual([
      'all tests pass',
    ]);
    expect((await check(ws, ['all tests pass'], { verification: null })).unchecked).toEqual(['all tests pass']);
  });

  it('an unrecognized criterion is unchecked, whatever words it shares with a checked form', async () => {
    const ws = makeWorkspace({ 'src/api.ts': 'x' });
    const c = await check(ws, ['the API in src/api.ts is stable', 'tests pass on Windows', 'the code is clean'], {
      changeSet: changes(['src/api.ts']),
      verification: verification(true),
    });
    expect(c).toEqual({
      complete: false,
      met: [],
      unmet: [],
      unchecked: ['the API in src/api.ts is stable', 'tests pass on Windows', 'the code is clean'],
    });
  });

  it("per-task criteria are listed with the task's name, after the job's", async () => {
    const ws = makeWorkspace({ 'src/api.ts': 'x', 'src/b.ts': 'y' });
    const observed = {
      changeSet: changes(['src/b.ts']),
      verification: verification(true),
      sandbox: false,
      signal: new AbortController().signal,
      workDir: tempDir(),
    };
    const spec = {
      workspace: ws,
      verify_timeout_s: 30,
      criteria: ['tests pass'],
      tasks: [
        { name: 'api-fix', criteria: ['src/api.ts must not change', 'src/b.ts changes'] },
        { name: 'docs', criteria: [] },
      ],
    };
    const c = await checkJobCriteria(spec as unknown as Parameters<typeof checkJobCriteria>[0], observed);
    expect(c).toEqual({
      complete: true,
      met: ['tests pass', 'api-fix: src/api.ts must not change', 'api-fix: src/b.ts changes'],
      unmet: [],
      unchecked: [],
    });
    expect(
      await checkJobCriteria(
        { ...spec, criteria: [], tasks: [{ name: 'x', criteria: [] }] } as unknown as Parameters<
          typeof checkJobCriteria
        >[0],
        observed,
      ),
    ).toBeNull();
  });
});
