import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { proofOf, resultOf } from '../helpers/answer.js';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});

/** Writes two lines; told (in its instruction file) that the second should be three, writes that instead. */
const WRITE_OUT = `if grep -q 'should be three' "$GAFFER_INSTRUCTION_FILE"; then printf 'one\\nthree\\n' > out.txt; else printf 'one\\ntwo\\n' > out.txt; fi; [ -f big.txt ] || seq 1 5000 > big.txt`;

describe('a follow-up sends review back to a finished task (issue 16)', () => {
  it("a builtin task's follow-up resumes its session: the first request carries the first run's conversation and the comment", async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({
      dataDir,
      runners: createRunners({
        sandbox: 'off',
        builtin: { endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'qwen3:8b' } },
      }),
    });
    try {
      server.script([
        { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hi\n' } }] },
        { text: 'Wrote it.\nFiles changed:\nhello.txt' },
      ]);
      const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
      const verify = 'test -f hello.txt';
      const { job: first } = engine.submit({
        workspace: ws,
        verify,
        tasks: [{ name: 'greet', runner: 'builtin', files: ['hello.txt'], instruction: 'write hello.txt saying hi' }],
      });
      await engine.settled(first.id);
      expect(engine.get(first.id).status).toBe('done');
      const before = server.requests.length;

      server.script([
        { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hello\n' } }] },
        { text: 'Changed it.\nFiles changed:\nhello.txt' },
      ]);
      const { job, created } = await engine.followUp(first.id, 'greet', {
        comments: [{ file: 'hello.txt', line: 1, text: 'say hello, not hi' }],
        note: 'keep the newline',
      });
      expect(created).toBe(true);
      expect(job.id).not.toBe(first.id);
      expect(job.follow_up).toEqual({ job: first.id, task: 'greet', resumed: true });
      expect(job.tasks).toEqual([expect.objectContaining({ name: 'greet', runner: 'builtin', files: ['hello.txt'] })]);
      await engine.settled(job.id);

      const resumed = server.requests[before];
      expect(resumed).toBeDefined();
      const wire = JSON.stringify(resumed?.body.messages);
      // the first run's conversation: its instruction, its tool call's result and its last answer
      expect(wire).toContain('write hello.txt saying hi');
      expect(wire).toContain('Wrote it.');
      expect(resumed?.lastText).toContain('hello.txt:1: say hello, not hi');
      expect(resumed?.lastText).toContain('line 1 now reads: "hi"');
      expect(resumed?.lastText).toContain('keep the newline');
      // a resumed session has seen its work: the diff is not repeated
      expect(resumed?.lastText).not.toContain('diff against its checkpoint');

      const final = engine.get(job.id);
      expect(final.status).toBe('done');
      expect(final.follow_up).toEqual({ job: first.id, task: 'greet', resumed: true });
      expect(resultOf(final).verification).toMatchObject({ blocking: false });
      expect(proofOf(final).verdict).toBeDefined();
      expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello\n');
      // the original job's answer is unchanged: the link is on the new job
      expect(engine.get(first.id).follow_up).toBeUndefined();
    } finally {
      await engine.close();
    }
  });

  it("a shell task's follow-up (no session) is told the comments and the task's diff in its instruction file", async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({ dataDir, runners: createRunners({ sandbox: 'off' }) });
    try {
      const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
      const { job: first } = engine.submit({
        workspace: ws,
        verify: 'test -f out.txt',
        tasks: [
          {
            name: 'write',
            runner: 'shell',
            instruction: 'write out.txt',
            command: WRITE_OUT,
            files: ['out.txt', 'big.txt'],
          },
        ],
      });
      await engine.settled(first.id);
      expect(engine.get(first.id).status).toBe('done');

      const { job } = await engine.followUp(first.id, 'write', {
        comments: [{ file: 'out.txt', line: 2, text: 'should be three' }],
      });
      expect(job.follow_up).toEqual({ job: first.id, task: 'write', resumed: false });
      await engine.settled(job.id);
      expect(engine.get(job.id).status).toBe('done');

      const instruction = readFileSync(join(dataDir, 'jobs', job.id, 'write.instruction.txt'), 'utf8');
      expect(instruction).toContain('write out.txt');
      expect(instruction).toContain('out.txt:2: should be three');
      expect(instruction).toContain('line 2 now reads: "two"');
      expect(instruction).toContain('diff --git a/out.txt b/out.txt');
      expect(instruction).toContain('+two');
      // the diff is bounded: the commented file's first, then the rest up to 8 KiB
      expect(instruction).toContain('diff cut at 8192 bytes');
      expect(instruction.length).toBeLessThan(10_000);
      expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('one\nthree\n');
    } finally {
      await engine.close();
    }
  });

  it('refuses a live job, an unknown task, a missing line, and a body that sets internal fields', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir(), 'data'), runners: createRunners({ sandbox: 'off' }) });
    try {
      const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
      const { job: live } = engine.submit({
        workspace: ws,
        verify: 'none',
        tasks: [{ name: 'slow', runner: 'shell', instruction: 'wait', command: 'sleep 30' }],
      });
      await expect(engine.followUp(live.id, 'slow', { note: 'x' })).rejects.toMatchObject({
        code: 'conflict',
        field: 'job_id',
      });
      engine.cancel(live.id);
      await engine.settled(live.id);
      await expect(engine.followUp(live.id, 'nope', { note: 'x' })).rejects.toMatchObject({
        code: 'not_found',
        field: 'task',
      });
      await expect(
        engine.followUp(live.id, 'slow', { comments: [{ file: 'a.txt', line: 9, text: 'x' }] }),
      ).rejects.toMatchObject({ code: 'invalid_request', field: 'comments[0].line' });
      await expect(
        engine.followUp(live.id, 'slow', { comments: [{ file: '../etc/passwd', line: 1, text: 'x' }] }),
      ).rejects.toMatchObject({ code: 'invalid_request', field: 'comments[0].file' });
      await expect(
        engine.followUp(live.id, 'slow', { note: 'x', session: '/tmp/evil.session.json' }),
      ).rejects.toMatchObject({ code: 'invalid_request', field: 'session' });
      await expect(engine.followUp(live.id, 'slow', {})).rejects.toMatchObject({
        code: 'invalid_request',
        field: 'comments',
      });
      await expect(engine.followUp('ffffffffffff', 'slow', { note: 'x' })).rejects.toMatchObject({ code: 'not_found' });
      // a request may not set the link itself
      expect(() =>
        engine.submit({
          workspace: ws,
          verify: 'none',
          follow_up: { job: live.id, task: 'slow', resumed: true },
          tasks: [{ runner: 'shell', instruction: 'true' }],
        }),
      ).toThrow(/follow_up/);
    } finally {
      await engine.close();
    }
  });
});

describe('a re-dispatch of a follow-up (issue 16)', () => {
  it('is the same task’s follow-up again, in a new session: linked to the original, its failed task only', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir(), 'data'), runners: createRunners({ sandbox: 'off' }) });
    try {
      const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
      const { job: first } = engine.submit({
        workspace: ws,
        verify: 'test -f out.txt',
        tasks: [
          {
            name: 'write',
            runner: 'shell',
            instruction: 'write out.txt',
            command: `grep -q 'fail this time' "$GAFFER_INSTRUCTION_FILE" && exit 3; echo one > out.txt`,
          },
        ],
      });
      await engine.settled(first.id);
      expect(engine.get(first.id).status).toBe('done');
      // the follow-up's worker fails: its re-dispatch is what a person does next
      const { job: follow } = await engine.followUp(first.id, 'write', { note: 'fail this time' });
      await engine.settled(follow.id);
      expect(engine.get(follow.id).follow_up).toEqual({ job: first.id, task: 'write', resumed: false });
      expect(engine.get(follow.id).status).not.toBe('done');
      const { job: again } = engine.redispatch(follow.id);
      await engine.settled(again.id);
      const answer = engine.get(again.id);
      expect(answer.follow_up).toEqual({ job: first.id, task: 'write', resumed: false });
      expect(answer.tasks.map((t) => t.name)).toEqual(['write']);
      // told the same review: it fails the same way, and says so
      expect(answer.status).toBe(engine.get(follow.id).status);
    } finally {
      await engine.close();
    }
  });
});
