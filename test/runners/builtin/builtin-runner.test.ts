import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ModelEndpoint } from '../../../src/config/config.js';
import { BuiltinRunner } from '../../../src/runners/builtin/builtin-runner.js';
import { startModelServer, type ModelRequest, type ModelServer } from '../../support/model-server/index.js';
import { APIS, builtinInput, endpointOf, tempDir } from './helpers.js';

let server: ModelServer;
let ws: ReturnType<typeof tempDir>;
let data: ReturnType<typeof tempDir>;

beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  ws = tempDir('gaffer-builtin-ws-');
  data = tempDir('gaffer-builtin-data-');
});
afterEach(() => {
  ws.cleanup();
  data.cleanup();
});

/** Requests since `from` (the server is shared by the file's tests). */
function requestsSince(from: number): ModelRequest[] {
  return server.requests.slice(from);
}

/** Text of the whole wire body (system prompt, messages, tool results). */
function wire(request: ModelRequest | undefined): string {
  return JSON.stringify(request?.body ?? {});
}

describe.each(APIS)('builtin runner over $label', ({ api }) => {
  const runner = (opts: { model?: string; idleMs?: number } = {}) =>
    new BuiltinRunner({ endpoint: endpointOf(server, api, opts.model), idleMs: opts.idleMs ?? 30_000 });

  it('makes a multi-step edit: the file on disk, the claim, rounds, tool calls and tokens counted from the loop', async () => {
    const from = server.requests.length;
    server.script([
      {
        toolCalls: [{ name: 'write_file', args: { path: 'src/hello.txt', content: 'hello world\n' } }],
        usage: { input: 100, output: 10 },
      },
      {
        toolCalls: [{ name: 'edit_file', args: { path: 'src/hello.txt', old_text: 'world', new_text: 'gaffer' } }],
        usage: { input: 200, output: 20 },
      },
      {
        text: 'I wrote a greeting and then edited it.\nFiles changed:\nsrc/hello.txt',
        usage: { input: 300, output: 30 },
      },
    ]);
    const input = builtinInput(ws.dir, data.dir, { instruction: 'Create src/hello.txt greeting gaffer.' });
    const report = await runner().run(input);

    expect(report).toMatchObject({
      status: 'done',
      outcome: 'success',
      stopReason: 'complete',
      error: null,
      filesChanged: ['src/hello.txt'],
      makesClaims: true,
      rounds: 3,
      toolCalls: 2,
      failedCalls: 0,
      inputTokens: 600,
      outputTokens: 60,
      modelServed: 'qwen3:8b',
      refusals: [],
      summary: 'I wrote a greeting and then edited it.\nFiles changed:\nsrc/hello.txt',
    });
    expect(readFileSync(join(ws.dir, 'src/hello.txt'), 'utf8')).toBe('hello gaffer\n');

    const requests = requestsSince(from);
    expect(requests).toHaveLength(3);
    expect(requests[0]?.model).toBe('qwen3:8b');
    expect(requests[0]?.toolNames.sort()).toEqual([
      'edit_file',
      'grep',
      'list_files',
      'read_file',
      'run_command',
      'write_file',
    ]);
    expect(requests[0]?.system).toContain(`The workspace is ${ws.dir}`);
    expect(requests[0]?.system).toContain('Files changed:');
    expect(requests[0]?.lastText).toBe('Create src/hello.txt greeting gaffer.');
    expect(requests[1]?.toolResults[0]?.output).toBe('wrote 12 bytes to src/hello.txt');
    expect(requests[2]?.toolResults[0]?.output).toBe('edited src/hello.txt');

    // a readable transcript, to onOutput and the log file
    expect(input.lines).toContain('[tool] edit_file → ok: edited src/hello.txt');
    expect(input.lines.at(-1)).toBe('[end] done');
    expect(readFileSync(input.logFile, 'utf8')).toContain('[model] Files changed:');
  });

  it('refuses a destructive command, tells the model why, and the model carries on', async () => {
    const from = server.requests.length;
    mkdirSync(join(ws.dir, 'dist'));
    server.script([
      { toolCalls: [{ name: 'run_command', args: { command: 'rm -rf ~' } }] },
      { toolCalls: [{ name: 'run_command', args: { command: 'rm -rf dist && echo cleaned' } }] },
      { text: 'Cleaned dist instead.\nFiles changed:\n(none)' },
    ]);
    const report = await runner().run(builtinInput(ws.dir, data.dir));

    expect(report.status).toBe('done');
    expect(report.toolCalls).toBe(2);
    expect(report.failedCalls).toBe(0); // a refusal is not a failure
    expect(report.refusals).toEqual([
      { tool: 'run_command', why: expect.stringContaining('deletes outside the workspace'), count: 1 },
    ]);
    const told = requestsSince(from)[1]?.toolResults[0]?.output ?? '';
    expect(told).toContain('REFUSED by gaffer');
    expect(told).toContain('deletes outside the workspace');
    if (api === 'anthropic') expect(requestsSince(from)[1]?.toolResults[0]?.isError).toBe(true);
    expect(requestsSince(from)[2]?.toolResults[0]?.output).toContain('cleaned');
    expect(existsSync(join(ws.dir, 'dist'))).toBe(false);
    expect(existsSync(data.dir)).toBe(true); // HOME of the worker
  });

  it('refuses a write outside its scope before it happens', async () => {
    const from = server.requests.length;
    server.script([
      { toolCalls: [{ name: 'write_file', args: { path: 'README.md', content: 'rewritten' } }] },
      { toolCalls: [{ name: 'write_file', args: { path: 'src/api.ts', content: 'export const api = 1;\n' } }] },
      { text: 'Done.\nFiles changed:\nsrc/api.ts' },
    ]);
    const report = await runner().run(builtinInput(ws.dir, data.dir, { files: ['src/api.ts'] }));

    expect(report.status).toBe('done');
    expect(report.filesChanged).toEqual(['src/api.ts']);
    expect(report.refusals).toEqual([
      {
        tool: 'write_file',
        why: 'README.md is outside your write scope: an implementer may write only src/api.ts',
        count: 1,
      },
    ]);
    expect(requestsSince(from)[1]?.toolResults[0]?.output).toContain('outside your write scope');
    expect(existsSync(join(ws.dir, 'README.md'))).toBe(false);
    expect(readFileSync(join(ws.dir, 'src/api.ts'), 'utf8')).toBe('export const api = 1;\n');
  });

  it('two parallel workers on one file: the second is refused with the holder named (lock conflict)', async () => {
    const from = server.requests.length;
    const isA = (r: ModelRequest) => wire(r).includes('task A');
    const isB = (r: ModelRequest) => wire(r).includes('task B');
    const bDone = join(data.dir, 'b-done');
    server.script([
      { when: isA, toolCalls: [{ name: 'write_file', args: { path: 'shared.txt', content: 'from A\n' } }] },
      // A is still at work (holding its lock) until the test says B has finished
      {
        when: isA,
        toolCalls: [{ name: 'run_command', args: { command: `until [ -f ${bDone} ]; do sleep 0.05; done` } }],
      },
      { when: isA, text: 'A done.\nFiles changed:\nshared.txt' },
      {
        when: isB,
        toolCalls: [{ name: 'edit_file', args: { path: 'shared.txt', old_text: 'from A', new_text: 'from B' } }],
      },
      { when: isB, text: 'B left shared.txt alone.\nFiles changed:\n(none)' },
    ]);
    const a = runner().run(builtinInput(ws.dir, data.dir, { workerName: 'worker-a', instruction: 'task A' }));
    await server.waitForRequests(from + 2);
    const b = await runner().run(builtinInput(ws.dir, data.dir, { workerName: 'worker-b', instruction: 'task B' }));
    writeFileSync(bDone, '');
    const reportA = await a;

    expect(reportA).toMatchObject({ status: 'done', filesChanged: ['shared.txt'], refusals: [] });
    expect(b).toMatchObject({
      status: 'done',
      filesChanged: [],
      refusals: [{ tool: 'edit_file', why: 'lock held by worker-a', count: 1 }],
    });
    const toldB = requestsSince(from).find((r) => isB(r) && r.isToolResult)?.toolResults[0]?.output ?? '';
    expect(toldB).toContain('lock held by worker-a');
    expect(readFileSync(join(ws.dir, 'shared.txt'), 'utf8')).toBe('from A\n');

    // A's end released its lock: a later worker may take the file
    server.script([
      { toolCalls: [{ name: 'edit_file', args: { path: 'shared.txt', old_text: 'from A', new_text: 'from C' } }] },
      { text: 'ok' },
    ]);
    const c = await runner().run(builtinInput(ws.dir, data.dir, { workerName: 'worker-c' }));
    expect(c).toMatchObject({ status: 'done', filesChanged: ['shared.txt'], refusals: [] });
  });

  it('a stalled model is stopped by the watchdog: stalled, panic', async () => {
    server.script([{ stall: 5_000, midStream: true, then: { text: 'too late' } }]);
    const began = Date.now();
    const report = await runner({ idleMs: 400 }).run(builtinInput(ws.dir, data.dir));
    expect(report).toMatchObject({
      status: 'stalled',
      outcome: 'panic',
      stopReason: 'stalled',
      error: expect.stringContaining('no progress (no tokens, no tool calls)'),
    });
    expect(Date.now() - began).toBeLessThan(4_000);
  });

  it('repeating the same failing call three times is stuck', async () => {
    writeFileSync(join(ws.dir, 'a.txt'), 'one\n');
    const call = { name: 'edit_file', args: { path: 'a.txt', old_text: 'two', new_text: 'three' } };
    server.script([{ toolCalls: [call] }, { toolCalls: [call] }, { toolCalls: [call] }, { text: 'never asked' }]);
    const report = await runner().run(builtinInput(ws.dir, data.dir));
    expect(report).toMatchObject({
      status: 'stuck',
      outcome: 'panic',
      failedCalls: 3,
      error: expect.stringContaining('the same failing call 3 times: edit_file'),
    });
    expect(report.detection).toMatchObject({ state: 'stuck' });
  });

  it('a 429 with retry-after ends rate_limited with the reset time, one request (no SDK retries)', async () => {
    const from = server.requests.length;
    server.script([
      { error: { status: 429, headers: { 'retry-after': '17' }, message: 'slow down' } },
      { text: 'should not be asked' },
    ]);
    const report = await runner().run(builtinInput(ws.dir, data.dir));
    expect(report).toMatchObject({
      status: 'rate_limited',
      outcome: 'expected_error',
      stopReason: 'rate_limited',
      retryAfterS: 17,
    });
    expect(report.detection).toMatchObject({ state: 'rate_limited', matched: 'HTTP 429' });
    expect(requestsSince(from)).toHaveLength(1);
    server.script([]);
  });

  it('an overloaded provider (529) with a reset header is a rate limit too', async () => {
    const reset = new Date(Date.now() + 90_000).toISOString();
    server.script([
      {
        error: {
          status: 529,
          headers: { 'anthropic-ratelimit-requests-reset': reset, 'anthropic-ratelimit-requests-remaining': '0' },
        },
      },
    ]);
    const report = await runner().run(builtinInput(ws.dir, data.dir));
    expect(report.status).toBe('rate_limited');
    expect(report.retryAfterS).toBeGreaterThanOrEqual(88);
    expect(report.retryAfterS).toBeLessThanOrEqual(90);
  });

  it('text that talks about 429 and rate limits decides nothing', async () => {
    server.script([
      { text: 'The API returned 429 Too Many Requests: rate limit exceeded in the old code; I fixed the retry.' },
    ]);
    const report = await runner().run(builtinInput(ws.dir, data.dir));
    expect(report).toMatchObject({ status: 'done', outcome: 'success' });
    expect(report.retryAfterS).toBeUndefined();
  });

  it('other HTTP errors are errors, not rate limits', async () => {
    server.script([{ error: { status: 401, message: 'invalid x-api-key' } }]);
    const report = await runner().run(builtinInput(ws.dir, data.dir));
    expect(report).toMatchObject({
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'api_error',
      error: expect.stringContaining('HTTP 401'),
    });
    expect(report.detection).toMatchObject({ state: 'auth_error' });
  });

  it('a substituted model fails the worker before its tool call runs', async () => {
    server.script([
      { model: 'cheap-model-7b', toolCalls: [{ name: 'write_file', args: { path: 'x.txt', content: 'x' } }] },
    ]);
    const report = await runner().run(builtinInput(ws.dir, data.dir));
    expect(report).toMatchObject({
      status: 'error',
      outcome: 'panic',
      stopReason: 'model_substituted',
      error: 'served model differs from selected model: cheap-model-7b',
      modelServed: 'cheap-model-7b',
    });
    expect(existsSync(join(ws.dir, 'x.txt'))).toBe(false);
  });

  it("an alias served by its family's dated snapshot is attested", async () => {
    server.script([{ model: 'claude-sonnet-4-20250514', text: 'ok' }]);
    const report = await runner({ model: 'claude-sonnet-4-latest' }).run(builtinInput(ws.dir, data.dir));
    expect(report).toMatchObject({ status: 'done', modelServed: 'claude-sonnet-4-20250514' });
  });

  it('resume: a second run continues the same conversation with the new instruction appended', async () => {
    const from = server.requests.length;
    server.script([
      {
        toolCalls: [
          { name: 'write_file', args: { path: 'calc.js', content: 'export const add = (a, b) => a - b;\n' } },
        ],
      },
      { text: 'Wrote calc.js.\nFiles changed:\ncalc.js' },
    ]);
    const first = await runner().run(builtinInput(ws.dir, data.dir, { instruction: 'Write calc.js with add().' }));
    expect(first.status).toBe('done');
    expect(first.session).toBe(join(data.dir, 'job-1', 'worker-1.session.json'));

    const second = requestsSince(from).length;
    server.script([
      { toolCalls: [{ name: 'edit_file', args: { path: 'calc.js', old_text: 'a - b', new_text: 'a + b' } }] },
      { text: 'Fixed add.\nFiles changed:\ncalc.js' },
    ]);
    const fix = await runner().run(
      builtinInput(ws.dir, data.dir, {
        workerName: 'fixer-1',
        role: 'fixer',
        resume: first.session,
        instruction: 'The test add(1,2)=3 fails. Fix it.',
      }),
    );
    expect(fix).toMatchObject({ status: 'done', filesChanged: ['calc.js'], rounds: 2 });
    expect(readFileSync(join(ws.dir, 'calc.js'), 'utf8')).toContain('a + b');

    const resumed = requestsSince(from)[second];
    const body = wire(resumed);
    expect(body).toContain('Write calc.js with add().'); // the earlier instruction
    expect(body).toContain('wrote 36 bytes to calc.js'); // the earlier tool result
    expect(body).toContain('Wrote calc.js.'); // the earlier answer
    expect(resumed?.lastText).toBe('The test add(1,2)=3 fails. Fix it.');
    expect(resumed?.messageCount).toBeGreaterThan(first.rounds + 1);
    expect(fix.session).toBe(join(data.dir, 'job-1', 'fixer-1.session.json'));
    expect(readFileSync(fix.session ?? '', 'utf8')).toContain('Write calc.js with add().');
  });

  it('refuses path traversal and a symlink escape in read_file and write_file', async () => {
    const outside = tempDir('gaffer-builtin-outside-');
    try {
      writeFileSync(join(outside.dir, 'secret.txt'), 'the secret\n');
      symlinkSync(outside.dir, join(ws.dir, 'link'));
      const from = server.requests.length;
      server.script([
        {
          toolCalls: [
            { name: 'read_file', args: { path: '../../../../etc/passwd' } },
            { name: 'read_file', args: { path: 'link/secret.txt' } },
            { name: 'write_file', args: { path: 'link/planted.txt', content: 'x' } },
            { name: 'write_file', args: { path: `${outside.dir}/planted2.txt`, content: 'x' } },
          ],
        },
        { text: 'Could not.\nFiles changed:\n(none)' },
      ]);
      const report = await runner().run(builtinInput(ws.dir, data.dir));
      expect(report.status).toBe('done');
      expect(report.filesChanged).toEqual([]);
      expect(report.refusals.map((r) => r.tool).sort()).toEqual(['read_file', 'read_file', 'write_file', 'write_file']);
      const told = requestsSince(from)[1]?.toolResults.map((t) => t.output) ?? [];
      expect(told).toHaveLength(4);
      for (const text of told) expect(text).toContain('outside the workspace');
      expect(told.join('\n')).not.toContain('the secret');
      expect(existsSync(join(outside.dir, 'planted.txt'))).toBe(false);
      expect(existsSync(join(outside.dir, 'planted2.txt'))).toBe(false);
    } finally {
      outside.cleanup();
    }
  });

  it('the model key never reaches run_command', async () => {
    const from = server.requests.length;
    server.script([
      { toolCalls: [{ name: 'run_command', args: { command: 'env' } }] },
      { text: 'Listed.\nFiles changed:\n(none)' },
    ]);
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: data.dir,
      ANTHROPIC_API_KEY: 'sk-test-secret-key',
      OPENAI_API_KEY: 'sk-test-secret-key',
      GAFFER_MODEL_KEY: 'sk-test-secret-key',
      TZ: 'Europe/Visible',
    };
    const spawned: number[] = [];
    const report = await runner().run(
      builtinInput(ws.dir, data.dir, { env, onSpawn: ({ pgid }) => spawned.push(pgid) }),
    );
    expect(report.status).toBe('done');
    expect(spawned).toHaveLength(1); // the command's process group is recorded, as a shell worker's is
    const printed = requestsSince(from)[1]?.toolResults[0]?.output ?? '';
    expect(printed).toContain('TZ=Europe/Visible');
    expect(printed).not.toContain('sk-test-secret-key');
  });

  it('a call to an unknown tool or with bad arguments is a failed call the model is told about', async () => {
    const from = server.requests.length;
    server.script([
      {
        toolCalls: [
          { name: 'delete_everything', args: {} },
          { name: 'write_file', args: { path: 1 } },
          { name: 'read_file', args: '{not json' },
        ],
      },
      { text: 'Sorry.\nFiles changed:\n(none)' },
    ]);
    const report = await runner().run(builtinInput(ws.dir, data.dir));
    expect(report).toMatchObject({ status: 'done', toolCalls: 3, failedCalls: 3, refusals: [] });
    const told = requestsSince(from)[1]?.toolResults.map((t) => t.output) ?? [];
    expect(told[0]).toContain("unavailable tool 'delete_everything'");
    expect(told[1]).toContain('Invalid input for tool write_file');
    expect(told[2]).toContain('JSON parsing failed');
  });

  it('runs commands through the sandbox seam when the worker is sandboxed, and says so', async () => {
    const from = server.requests.length;
    server.script([{ toolCalls: [{ name: 'run_command', args: { command: 'echo inside' } }] }, { text: 'ok' }]);
    const wrapped = new BuiltinRunner({
      endpoint: endpointOf(server, api),
      sandbox: {
        policy: 'auto',
        works: true,
        wrap: ({ shellCommand }) => ({
          argv: ['/bin/sh', '-c', `echo WRAPPED; ${shellCommand ?? ''}`],
          sandboxed: true,
          network: 'none',
        }),
      },
    });
    const report = await wrapped.run(builtinInput(ws.dir, data.dir, { sandbox: true }));
    expect(report.sandboxed).toBe(true);
    expect(requestsSince(from)[1]?.toolResults[0]?.output).toContain('WRAPPED\ninside');

    server.script([{ text: 'ok' }]);
    expect((await runner().run(builtinInput(ws.dir, data.dir, { sandbox: true }))).sandboxed).toBe(false);
  });

  it('timeout and cancel stop the loop', async () => {
    server.script([{ stall: 5_000 }]);
    const timedOut = await runner().run(builtinInput(ws.dir, data.dir, { timeoutMs: 300 }));
    expect(timedOut).toMatchObject({
      status: 'timeout',
      outcome: 'panic',
      timedOut: true,
      error: 'timed out after 0.3 s',
    });

    server.script([{ stall: 5_000 }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const cancelled = await runner().run(builtinInput(ws.dir, data.dir, { signal: controller.signal }));
    expect(cancelled).toMatchObject({ status: 'cancelled', outcome: 'cancelled', isCancelled: true });
  });

  it('running out of rounds mid-work is reported, not passed as done', async () => {
    server.script([
      { toolCalls: [{ name: 'list_files', args: {} }] },
      { toolCalls: [{ name: 'list_files', args: { path: 'src' } }] },
    ]);
    writeFileSync(join(ws.dir, 'f.txt'), '');
    mkdirSync(join(ws.dir, 'src'));
    const report = await runner().run(builtinInput(ws.dir, data.dir, { maxRounds: 2 }));
    expect(report).toMatchObject({
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'max_rounds',
      rounds: 2,
      toolCalls: 2,
    });
  });
});

describe('builtin runner without an endpoint', () => {
  it('ends with a record that says how to configure one', async () => {
    const report = await new BuiltinRunner({ endpoint: null }).run(builtinInput(ws.dir, data.dir));
    expect(report).toMatchObject({
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'not_started',
      error: expect.stringContaining('GAFFER_MODEL_URL'),
    });
  });

  it("takes the config's endpoint as it is; with no default model a task must name one", async () => {
    const fromConfig = {
      url: `${server.url}/v1`,
      api: 'openai-compatible',
      model: null,
      key: null,
      keyFrom: null,
    } satisfies ModelEndpoint;
    const runner = new BuiltinRunner({ endpoint: () => fromConfig });
    const unnamed = await runner.run(builtinInput(ws.dir, data.dir));
    expect(unnamed).toMatchObject({
      status: 'error',
      stopReason: 'not_started',
      error: expect.stringContaining('no model selected'),
    });
    server.script([{ text: 'hi' }]);
    const named = await runner.run(builtinInput(ws.dir, data.dir, { model: 'qwen3:8b' }));
    expect(named).toMatchObject({ status: 'done', modelServed: 'qwen3:8b' });
  });

  it('a bad resume handle is a record, not a throw', async () => {
    const report = await new BuiltinRunner({ endpoint: endpointOf(server, 'openai-compatible') }).run(
      builtinInput(ws.dir, data.dir, { resume: join(data.dir, 'nope.json') }),
    );
    expect(report).toMatchObject({ status: 'error', error: expect.stringContaining('cannot resume') });
  });
});
