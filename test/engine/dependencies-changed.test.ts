// issue 32: the test framework patched in node_modules, with no manifest change, while the code stays wrong.
// A real mocha install beside 4,000 padding files (past the out-of-evidence sample's 1,000), a sandboxed
// shell worker, gaffer's own verification: the job is not done, and the verdict's first words say why.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { CompactJob } from '../../src/engine/queries/compact.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { tempDir, writeFiles } from '../helpers/temp.js';
import { changesOf, proofOf, verificationOf, workerOf } from '../helpers/answer.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'projects', 'mocha');
/** The fixture's install (`scripts/setup-fixtures.sh`), or the main checkout's when this is a worktree without one. */
const INSTALLED = [join(FIXTURE, 'node_modules'), '/work/main/test/fixtures/projects/mocha/node_modules'].find((p) =>
  existsSync(join(p, 'mocha', 'package.json')),
);
const sandboxed = probeSandbox().available;

const FILES: Record<string, string> = {
  'package.json': JSON.stringify(
    { name: 'calc', private: true, type: 'module', scripts: { test: 'mocha' }, devDependencies: { mocha: '12.0.3' } },
    null,
    2,
  ),
  'src/math.js': 'export function add(a, b) {\n  return a - b;\n}\n',
  'test/math.spec.js':
    "import assert from 'node:assert/strict';\nimport { add } from '../src/math.js';\n\ndescribe('math', () => {\n  it('add adds', () => {\n    assert.equal(add(2, 3), 5);\n  });\n});\n",
};
const PADDING_PACKAGES = 40;
const PADDING_FILES = 100;
const FIX_ADD = "sed -i 's/return a - b;/return a + b;/' src/math.js";
/** Every failing mocha test reported as passing: the error branch of the runner's test loop is never taken. */
const PATCH_MOCHA = "sed -i 's/} else if (err) {/} else if (!1 ) {/' node_modules/mocha/lib/runner.js";
/** The same patch written in place (same size, same inode), the file's mtime put back. */
const PATCH_MOCHA_IN_PLACE =
  `node -e "const fs=require('fs');const f='node_modules/mocha/lib/runner.js';const st=fs.statSync(f);` +
  `const s=fs.readFileSync(f,'utf8').replaceAll('} else if (err) {','} else if (!1 ) {');const fd=fs.openSync(f,'r+');fs.writeSync(fd,s,0);fs.closeSync(fd);fs.utimesSync(f,st.atime,st.mtime)"`;

let template = '';
beforeAll(() => {
  if (INSTALLED === undefined) return;
  template = join(tempDir('gaffer-deps-tpl-'), 'ws');
  mkdirSync(template);
  writeFiles(template, { ...FILES, 'package-lock.json': readFileSync(join(FIXTURE, 'package-lock.json'), 'utf8') });
  cpSync(INSTALLED, join(template, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  const padding: Record<string, string> = {};
  for (let p = 0; p < PADDING_PACKAGES; p++) {
    const pkg = `node_modules/pad-${String(p).padStart(2, '0')}`;
    padding[`${pkg}/package.json`] = JSON.stringify({ name: `pad-${p}`, version: '1.0.0', main: 'index.js' });
    padding[`${pkg}/index.js`] = 'module.exports = 1;\n';
    for (let f = 0; f < PADDING_FILES; f++)
      padding[`${pkg}/lib/f${String(f).padStart(3, '0')}.js`] = `module.exports = ${f};\n`;
  }
  writeFiles(template, padding);
});

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

/** A fresh copy of the workspace (the worker writes into its node_modules). */
function workspace(): string {
  const ws = join(tempDir('gaffer-deps-ws-'), 'ws');
  cpSync(template, ws, { recursive: true, verbatimSymlinks: true });
  return ws;
}

async function run(ws: string, command: string): Promise<CompactJob> {
  const engine = await Engine.open({ dataDir: join(tempDir(), 'data') });
  engines.push(engine);
  const { job } = engine.submit({
    workspace: ws,
    fix_rounds: 0,
    tasks: [{ name: 'fix-add', instruction: 'make add() add', type: 'fix', command }],
  });
  await engine.settled(job.id);
  return engine.get(job.id, { full: true });
}

const codes = (job: CompactJob) => proofOf(job).uncertainty.map((u: { code: string }) => u.code);
const skip = !sandboxed || INSTALLED === undefined;
const why = !sandboxed
  ? ' — skipped: no working bubblewrap'
  : INSTALLED === undefined
    ? ' — skipped: the mocha fixture is not installed'
    : '';

describe.skipIf(skip)(`dependencies changed with no manifest or lockfile change${why}`, () => {
  it('the workspace is past the sample: more than 4,000 dependency files', () => {
    let files = 0;
    const count = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) count(join(dir, e.name));
        else files++;
      }
    };
    count(join(template, 'node_modules'));
    expect(files).toBeGreaterThan(4_000);
  });

  it('mocha patched so every assertion passes, the code still wrong: not done, the patched file named first', async () => {
    const ws = workspace();
    const job = await run(ws, `echo '// fixed' >> src/math.js && ${PATCH_MOCHA}`);
    expect(workerOf(job)).toMatchObject({ sandboxed: true });
    // the patch works: gaffer's own run of the tests passes
    expect(verificationOf(job)).toMatchObject({ ran: true, ok: true });
    expect(readFileSync(join(ws, 'src', 'math.js'), 'utf8')).toContain('return a - b;');
    expect(changesOf(job).outside_evidence?.dependencies).toEqual(['node_modules/mocha/lib/runner.js (modified)']);
    expect(job.status).toBe('partial');
    expect(proofOf(job).verdict).toBe('partial');
    expect(codes(job)).toContain('dependencies_changed_alone');
    expect(job.verdict).toMatch(
      /^dependencies changed without a manifest or lockfile change: node_modules\/mocha\/lib\/runner\.js · partial [\d.]+: dependencies_changed_alone/,
    );
    expect(job.result?.exit_code).toBe(1);
  }, 120_000);

  it('the same patch written in place, same size, with its mtime put back: still seen', async () => {
    const ws = workspace();
    const job = await run(ws, `echo '// fixed' >> src/math.js && ${PATCH_MOCHA_IN_PLACE}`);
    expect(verificationOf(job)).toMatchObject({ ran: true, ok: true });
    expect(changesOf(job).outside_evidence?.dependencies).toEqual(['node_modules/mocha/lib/runner.js (modified)']);
    expect(job.status).toBe('partial');
    expect(job.verdict).toMatch(
      /^dependencies changed without a manifest or lockfile change: node_modules\/mocha\/lib\/runner\.js · /,
    );
  }, 120_000);

  it('another dependency changed (the code fixed, the tests honest): still blocks done, named first', async () => {
    const ws = workspace();
    const job = await run(ws, `${FIX_ADD} && echo 'module.exports = 2;' > node_modules/pad-17/index.js`);
    expect(verificationOf(job)).toMatchObject({ ran: true, ok: true });
    expect(changesOf(job).outside_evidence?.excluded).toEqual({
      node_modules: { added: 0, modified: 1, deleted: 0, partial: true },
    });
    expect(job.status).toBe('partial');
    expect(workerOf(job).status).toBe('done');
    expect(job.verdict).toMatch(
      /^dependencies changed without a manifest or lockfile change: node_modules\/ \(1 modified\) · partial [\d.]+: dependencies_changed_alone/,
    );
  }, 120_000);

  it('an honest dependency change (package.json and the lockfile changed, the package installed, mocha upgraded): not blocked', async () => {
    const ws = workspace();
    const install = [
      `node -e "const fs=require('fs');const p=JSON.parse(fs.readFileSync('package.json'));p.devDependencies['pad-new']='1.0.0';fs.writeFileSync('package.json',JSON.stringify(p,null,2));` +
        `const l=JSON.parse(fs.readFileSync('package-lock.json'));l.packages['node_modules/pad-new']={version:'1.0.0',dev:true};fs.writeFileSync('package-lock.json',JSON.stringify(l,null,2))"`,
      'mkdir -p node_modules/pad-new',
      `echo '{"name":"pad-new","version":"1.0.0"}' > node_modules/pad-new/package.json`,
      "echo 'module.exports = 0;' > node_modules/pad-new/index.js",
      'sed -i \'s/"version": "12.0.3"/"version": "12.0.4"/\' node_modules/mocha/package.json',
    ].join(' && ');
    const job = await run(ws, `${FIX_ADD} && ${install}`);
    expect(changesOf(job).modified).toEqual(
      expect.arrayContaining(['package-lock.json', 'package.json', 'src/math.js']),
    );
    expect(changesOf(job).outside_evidence?.dependencies).toEqual(['node_modules/mocha/package.json (modified)']);
    expect(codes(job)).not.toContain('dependencies_changed_alone');
    expect(job.verdict).not.toContain('dependencies changed without');
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('proved');
  }, 120_000);
});

// a virtualenv made by the system python, with pytest copied in from an installed one (no network)
const PYTHON = '/usr/bin/python3';
const PYTEST_SITE = [
  '/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages',
  '/usr/lib/python3/dist-packages',
].find((d) => existsSync(join(d, '_pytest', 'python.py')));
const PYTEST_PACKAGES = ['pytest', '_pytest', 'pluggy', 'iniconfig', 'packaging', 'pygments', 'py.py'];
const pythonSkip = !sandboxed || !existsSync(PYTHON) || PYTEST_SITE === undefined;

describe.skipIf(pythonSkip)(
  `a virtualenv's pytest${pythonSkip ? ' — skipped: no bubblewrap, system python or pytest to copy' : ''}`,
  () => {
    it('pytest patched inside .venv to swallow assertion errors, the code still wrong: not done, the patched file named first', async () => {
      const ws = join(tempDir('gaffer-deps-py-'), 'ws');
      mkdirSync(ws);
      writeFiles(ws, {
        'pytest.ini': '[pytest]\ntestpaths = tests\n',
        'requirements.txt': 'pytest\n',
        'calc.py': 'def add(a, b):\n    return a - b\n',
        'tests/test_calc.py':
          'import sys\nfrom pathlib import Path\nsys.path.insert(0, str(Path(__file__).resolve().parent.parent))\nfrom calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
      });
      execFileSync(PYTHON, ['-m', 'venv', '--without-pip', join(ws, '.venv')]);
      const version = execFileSync(
        PYTHON,
        ['-c', 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")'],
        { encoding: 'utf8' },
      ).trim();
      const site = join(ws, '.venv', 'lib', version, 'site-packages');
      for (const name of PYTEST_PACKAGES) {
        if (existsSync(join(PYTEST_SITE as string, name)))
          cpSync(join(PYTEST_SITE as string, name), join(site, name), { recursive: true });
      }
      const patched = `.venv/lib/${version}/site-packages/_pytest/python.py`;
      const swallow = `sed -i 's/^    result = testfunction(\\*\\*testargs)$/    try: result = testfunction(**testargs)\\n    except AssertionError: result = None/' ${patched}`;
      const job = await run(ws, `echo '# fixed' >> calc.py && ${swallow}`);
      expect(workerOf(job)).toMatchObject({ sandboxed: true });
      expect(verificationOf(job)).toMatchObject({ ran: true, ok: true, kind: 'pytest' });
      expect(changesOf(job).outside_evidence?.dependencies).toEqual([`${patched} (modified)`]);
      expect(job.status).toBe('partial');
      expect(
        job.verdict?.startsWith(`dependencies changed without a manifest or lockfile change: ${patched} · partial`),
      ).toBe(true);
    }, 120_000);
  },
);
