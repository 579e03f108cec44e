import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { changesOf, proofOf, resultOf } from '../helpers/answer.js';

// issue 16 for worktree jobs: a follow-up of a task runs in a worktree from that task's branch,
// through real jobs — a real repository, real `git worktree`, real shell workers, the real verification.

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(builtin = false): Promise<{ engine: Engine; dataDir: string }> {
  const dataDir = join(tempDir('gaffer-data-'), 'data');
  const endpoint = { api: 'openai-compatible' as const, url: `${server.url}/v1`, key: 'sk-test', model: 'qwen3:8b' };
  const engine = await Engine.open({
    dataDir,
    runners: createRunners({ sandbox: 'off', ...(builtin ? { builtin: { endpoint } } : {}) }),
  });
  engines.push(engine);
  return { engine, dataDir };
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
const isAncestor = (cwd: string, a: string, b: string) => {
  try {
    execFileSync('git', ['merge-base', '--is-ancestor', a, b], { cwd });
    return true;
  } catch {
    return false;
  }
};

/** Writes out.txt; told (in its instruction file) that line 2 should be three, changes the `two` it finds there — and fails when the file is not there. */
const WRITE = `if grep -q 'should be three' "$GAFFER_INSTRUCTION_FILE"; then grep -qx two out.txt && sed -i 's/^two$/three/' out.txt; else printf 'one\\ntwo\\n' > out.txt; fi`;
const VERIFY = `sh -c 'test -f out.txt || test -f other.txt'`;

/** A finished worktree job of two shell tasks: `write` (out.txt) and `other` (other.txt). */
async function twoTasks(engine: Engine, merge: 'none' | 'auto') {
  const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
  const { job } = engine.submit({
    workspace: ws,
    isolation: 'worktree',
    merge,
    verify: VERIFY,
    tasks: [
      { name: 'write', runner: 'shell', instruction: 'write out.txt', files: ['out.txt'], command: WRITE },
      {
        name: 'other',
        runner: 'shell',
        instruction: 'write other.txt',
        files: ['other.txt'],
        command: 'echo other > other.txt',
      },
    ],
  });
  await engine.settled(job.id);
  expect(engine.get(job.id).status).toBe('done');
  return { ws, id: job.id };
}

describe("a follow-up of a worktree job's task (issue 16)", () => {
  it("runs in a worktree from the task's branch: the comment's line is read there, the worker finds the file as the task left it, its branch grows from the original's and its evidence is its own change", async () => {
    const { engine, dataDir } = await open();
    const { ws, id } = await twoTasks(engine, 'none');
    // merge none: the work is on the branch only
    expect(existsSync(join(ws, 'out.txt'))).toBe(false);
    const tip = git(ws, 'rev-parse', `gaffer/${id}/write`);

    const { job } = await engine.followUp(id, 'write', {
      comments: [{ file: 'out.txt', line: 2, text: 'should be three' }],
    });
    expect(job.follow_up).toEqual({ job: id, task: 'write', resumed: false });
    await engine.settled(job.id);
    const final = engine.get(job.id, { full: true });
    expect(final.status).toBe('done');
    expect(resultOf(final).verification).toMatchObject({ ran: true, ok: true, blocking: false });
    expect(proofOf(final).verdict).toBe('proved');

    // the line and the diff told to the new session are the branch's (the workspace has no out.txt)
    const instruction = readFileSync(join(dataDir, 'jobs', job.id, 'write.instruction.txt'), 'utf8');
    expect(instruction).toContain('out.txt:2: should be three');
    expect(instruction).toContain('line 2 now reads: "two"');
    expect(instruction).toContain('diff --git a/out.txt b/out.txt');
    expect(instruction).toContain('+two');

    // its base is the original task's tip; its branch holds the worker's edit of the file the task wrote
    const wt = final.result?.worktrees;
    expect(wt?.base).toBe(tip);
    expect(wt?.tasks).toMatchObject([{ task: 'write', branch: `gaffer/${job.id}/write`, state: 'removed' }]);
    expect(isAncestor(ws, tip, `gaffer/${job.id}/write`)).toBe(true);
    expect(git(ws, 'show', `gaffer/${job.id}/write:out.txt`)).toBe('one\nthree');
    expect(git(ws, 'diff', '--name-only', tip, `gaffer/${job.id}/write`)).toBe('out.txt');
    // the follow-up's evidence is what it changed on top of the task's work: out.txt modified, nothing added
    expect(changesOf(final)).toMatchObject({ added: [], modified: ['out.txt'], deleted: [] });
    // merge none, as the original job: the workspace is untouched, the original's branch too
    expect(existsSync(join(ws, 'out.txt'))).toBe(false);
    expect(git(ws, 'rev-parse', `gaffer/${id}/write`)).toBe(tip);
  });

  it("merge auto: the original task's work is in the workspace, so only the follow-up's change is applied on top of it", async () => {
    const { engine } = await open();
    const { ws, id } = await twoTasks(engine, 'auto');
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('one\ntwo\n');
    const { job } = await engine.followUp(id, 'write', {
      comments: [{ file: 'out.txt', line: 2, text: 'should be three' }],
    });
    await engine.settled(job.id);
    const final = engine.get(job.id, { full: true });
    expect(final.status).toBe('done');
    expect(final.result?.worktrees?.merges).toMatchObject([
      { tasks: ['write'], applied: true, verification: { ok: true } },
    ]);
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('one\nthree\n');
    expect(readFileSync(join(ws, 'other.txt'), 'utf8')).toBe('other\n');
    expect(engine.events(job.id).events.map((e) => e.message)).toContainEqual(
      expect.stringContaining(`gaffer/${id}/write is in the workspace already`),
    );
  });

  it("gaffer merge of a follow-up whose original was never merged applies both together: the follow-up's change has nothing under it alone", async () => {
    const { engine } = await open();
    const { ws, id } = await twoTasks(engine, 'none');
    const { job } = await engine.followUp(id, 'write', { note: 'line 2 should be three' });
    await engine.settled(job.id);
    expect(engine.get(job.id).status).toBe('done');
    const { job: merge } = await engine.merge(job.id, null);
    await engine.settled(merge.id);
    expect(engine.get(job.id, { full: true }).result?.worktrees?.merges).toMatchObject([
      { tasks: ['write'], applied: true },
    ]);
    expect(engine.events(merge.id).events.map((e) => e.message)).toContainEqual(
      expect.stringContaining(`gaffer/${id}/write not merged into the workspace yet`),
    );
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('one\nthree\n');
    // the other task's branch is not the follow-up's: it stays out
    expect(existsSync(join(ws, 'other.txt'))).toBe(false);
  });

  it("a builtin task's follow-up resumes its session in the folder the task's worktree was in, on the task's branch", async () => {
    const { engine, dataDir } = await open(true);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    server.script([
      { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hi\n' } }] },
      { text: 'Wrote it.\nFiles changed:\nhello.txt' },
    ]);
    const { job: first } = engine.submit({
      workspace: ws,
      isolation: 'worktree',
      verify: 'test -f hello.txt',
      tasks: [{ name: 'greet', runner: 'builtin', instruction: 'write hello.txt saying hi' }],
    });
    await engine.settled(first.id);
    expect(engine.get(first.id).status).toBe('done');
    const folder = join(dataDir, 'worktrees', first.id, 'greet');
    // passed: its worktree is gone, its branch kept
    expect(existsSync(folder)).toBe(false);

    const before = server.requests.length;
    server.script([
      { toolCalls: [{ name: 'run_command', args: { command: 'pwd; cat hello.txt' } }] },
      { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hello\n' } }] },
      { text: 'Changed it.\nFiles changed:\nhello.txt' },
    ]);
    const { job } = await engine.followUp(first.id, 'greet', {
      comments: [{ file: 'hello.txt', line: 1, text: 'say hello, not hi' }],
    });
    expect(job.follow_up).toEqual({ job: first.id, task: 'greet', resumed: true });
    await engine.settled(job.id);
    expect(engine.get(job.id).status).toBe('done');

    const resumed = server.requests[before];
    // the first run's conversation, and the line as the branch has it
    expect(JSON.stringify(resumed?.body.messages)).toContain('Wrote it.');
    expect(resumed?.lastText).toContain('line 1 now reads: "hi"');
    expect(resumed?.lastText).not.toContain('diff against its checkpoint');
    // its worker ran in the task's old folder and found the task's file there
    expect(JSON.stringify(server.requests[before + 1]?.body.messages)).toContain(
      JSON.stringify(`exit code 0\n${folder}\nhi\n`).slice(1, -1),
    );
    expect(git(ws, 'show', `gaffer/${job.id}/greet:hello.txt`)).toBe('hello');
    expect(isAncestor(ws, `gaffer/${first.id}/greet`, `gaffer/${job.id}/greet`)).toBe(true);
    expect(existsSync(folder)).toBe(false);

    // a follow-up of the follow-up resumes the session where it last ran: the same folder, on the follow-up's branch
    const again = server.requests.length;
    server.script([
      { toolCalls: [{ name: 'run_command', args: { command: 'pwd; cat hello.txt' } }] },
      { text: 'Nothing to change.\nFiles changed:\n' },
    ]);
    const { job: second } = await engine.followUp(job.id, 'greet', { note: 'check it once more' });
    expect(second.follow_up).toEqual({ job: job.id, task: 'greet', resumed: true });
    await engine.settled(second.id);
    expect(JSON.stringify(server.requests[again + 1]?.body.messages)).toContain(
      JSON.stringify(`exit code 0\n${folder}\nhello\n`).slice(1, -1),
    );
  });

  it("a builtin task whose worktree was kept (it failed) is followed up in a folder of its own, in a new session told the branch's diff", async () => {
    const { engine, dataDir } = await open(true);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    server.script([
      { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hi\n' } }] },
      { text: 'Wrote it.\nFiles changed:\nhello.txt' },
    ]);
    const body = {
      workspace: ws,
      isolation: 'worktree',
      verify: 'grep -q hello hello.txt',
      fix_rounds: 0,
      tasks: [{ name: 'greet', runner: 'builtin', instruction: 'write hello.txt' }],
    };
    const { job: first } = engine.submit(body);
    await engine.settled(first.id);
    const kept = join(dataDir, 'worktrees', first.id, 'greet');
    expect(engine.get(first.id, { full: true }).result?.worktrees?.tasks).toMatchObject([
      { state: 'kept', path: kept },
    ]);

    const before = server.requests.length;
    server.script([
      { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hello\n' } }] },
      { text: 'Fixed it.\nFiles changed:\nhello.txt' },
    ]);
    const { job } = await engine.followUp(first.id, 'greet', {
      comments: [{ file: 'hello.txt', line: 1, text: 'say hello' }],
    });
    expect(job.follow_up).toEqual({ job: first.id, task: 'greet', resumed: false });
    await engine.settled(job.id);
    expect(engine.get(job.id).status).toBe('done');
    const fresh = server.requests[before];
    expect(JSON.stringify(fresh?.body.messages)).not.toContain('Wrote it.');
    expect(fresh?.lastText).toContain('diff --git a/hello.txt b/hello.txt');
    expect(fresh?.lastText).toContain('+hi');
    // the failed task's worktree is left as it was, for its autopsy
    expect(readFileSync(join(kept, 'hello.txt'), 'utf8')).toBe('hi\n');
    expect(git(ws, 'show', `gaffer/${job.id}/greet:hello.txt`)).toBe('hello');
  });

  it('a task whose branch was deleted is refused, naming the branch and how to get it back', async () => {
    const { engine } = await open();
    const { ws, id } = await twoTasks(engine, 'none');
    const tip = git(ws, 'rev-parse', `gaffer/${id}/write`);
    git(ws, 'branch', '-D', `gaffer/${id}/write`);
    await expect(engine.followUp(id, 'write', { note: 'x' })).rejects.toMatchObject({
      code: 'conflict',
      field: 'task',
      message: expect.stringContaining(`branch gaffer/${id}/write, which no longer exists`),
    });
    await expect(engine.followUp(id, 'write', { note: 'x' })).rejects.toThrow(`git branch gaffer/${id}/write ${tip}`);
    // a line on a file the branch does not have is refused by field
    await expect(
      engine.followUp(id, 'other', { comments: [{ file: 'out.txt', line: 1, text: 'x' }] }),
    ).rejects.toMatchObject({ code: 'invalid_request', field: 'comments[0].file' });
    expect(engine.list()).toHaveLength(1);
  });
});
