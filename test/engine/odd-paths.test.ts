import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { FullJob } from '../../src/domain/answer.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';

// issue 32 "the evidence sees everything written": a file name that is not UTF-8, and a file whose
// path is past PATH_MAX (4,096 bytes), are listed (the first C-quoted as git shows it) and audited
// like any other write. Real jobs, real git, sandboxed shell workers (bwrap).

const engines: Engine[] = [];
const deep: string[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
  // node's rmSync cannot remove a path past PATH_MAX; rm walks it folder by folder
  for (const ws of deep.splice(0)) execFileSync('rm', ['-rf', join(ws, 'd'.repeat(200))]);
});

async function open(): Promise<Engine> {
  const sandbox = createSandbox(probeSandbox().available ? 'required' : 'off');
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    runners: createRunners({ sandbox }),
    sandbox,
  });
  engines.push(engine);
  return engine;
}

async function run(engine: Engine, body: Record<string, unknown>): Promise<FullJob> {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id, { full: true }) as FullJob;
}

/** 25 folders of 200 bytes, then a file: a path of 5,000+ bytes (python: a shell's `cd` gives up past PATH_MAX). */
const DEEP = `python3 -c "import os
for _ in range(25): os.mkdir('d' * 200); os.chdir('d' * 200)
open('f.js', 'w').write('deep')"`;

describe('odd paths are evidence', () => {
  it('a file name that is not UTF-8 written outside `files`: a write-policy violation, named C-quoted; not `proved`', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const job = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [
        {
          name: 'fix-add',
          instruction: 'make add add',
          files: ['src/math.js'],
          command: `${FIX_ADD} && echo x > "src/$(printf 'caf\\351.js')"`,
        },
      ],
    });
    // it is there, under its bytes
    expect(readdirSync(join(ws, 'src'), { encoding: 'buffer' }).map((b) => b.toString('latin1'))).toContain(
      'caf\xe9.js',
    );
    expect(job.result?.changes?.added).toEqual(['"src/caf\\351.js"']);
    expect(job.result?.workers[0]).toMatchObject({
      write_audit: 'violation',
      error: expect.stringContaining('"src/caf\\351.js"'),
    });
    expect(job.result?.proof?.verdict).not.toBe('proved');
    expect(job.status).not.toBe('done');
  }, 60_000);

  it('a file name that is not UTF-8 already there: left alone it is no change, its content edited (same size) is a modification, charged', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    execFileSync(
      'sh',
      ['-c', `printf one > "src/$(printf 'caf\\351.js')" && printf two > "src/$(printf 'na\\357ve.js')"`],
      { cwd: ws },
    );
    const name = (base: string) => `"src/${base}.js"`;
    const untouched = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [{ name: 'fix-add', instruction: 'make add add', files: ['src/math.js'], command: FIX_ADD }],
    });
    expect(untouched.result?.files_changed).toEqual(['src/math.js']);
    expect(untouched.status).toBe('done');
    // twice: the second checkpoint is a warm one
    for (const round of [1, 2]) {
      const edited = await run(engine, {
        workspace: ws,
        verify: 'npm test',
        fix_rounds: 0,
        tasks: [
          {
            name: 'edit',
            instruction: 'edit',
            files: ['src/math.js'],
            command: `printf 'ab${round}' > "src/$(printf 'caf\\351.js')"; echo '// ${round}' >> src/math.js`,
          },
        ],
      });
      expect(edited.result?.changes?.modified).toEqual([name('caf\\351'), 'src/math.js']);
      expect(edited.result?.workers[0]).toMatchObject({
        write_audit: 'violation',
        error: expect.stringContaining(name('caf\\351')),
      });
      expect(edited.status).not.toBe('done');
    }
  }, 120_000);

  it('a file whose path is past PATH_MAX: listed (the folder git cannot open), a write-policy violation; not "nothing changed"', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    deep.push(ws);
    const job = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [
        { name: 'fix-add', instruction: 'make add add', files: ['src/math.js'], command: `${FIX_ADD} && ${DEEP}` },
      ],
    });
    // the file is there, past PATH_MAX (find walks folder by folder)
    expect(execFileSync('find', [ws, '-name', 'f.js'], { encoding: 'utf8' }).trim().length).toBeGreaterThan(5_000);
    const listed = (job.result?.changes?.added ?? []).filter((p) => p.startsWith('ddd'));
    expect(listed).toHaveLength(1);
    // named by its deepest folder that fits in git's 4 KB warning
    expect(listed[0]?.length).toBeGreaterThan(3_800);
    expect(job.result?.workers[0]).toMatchObject({ write_audit: 'violation' });
    expect(job.result?.proof?.verdict).not.toBe('proved');
  }, 60_000);

  it('with no `files`, a name that is not UTF-8 is listed and allowed; a job that wrote only a deep path did change something', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    deep.push(ws);
    const job = await run(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'write', instruction: 'write', command: `echo x > "$(printf 'caf\\351.txt')" && ${DEEP}` }],
    });
    expect(job.result?.changes?.added).toEqual(expect.arrayContaining(['"caf\\351.txt"']));
    expect(job.result?.changes?.count).toBe(2);
    expect(job.result?.workers[0]).toMatchObject({ status: 'done' });
    expect(job.result?.proof?.uncertainty.map((u) => u.code)).not.toContain('no_changes_observed');
  }, 60_000);
});
