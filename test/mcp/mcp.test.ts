import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { COORDINATOR_GUIDE } from '../../src/interfaces/guide.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';
import { openEngine, serveEngine } from '../http/helpers.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');
const TOOLS = [
  'workers_dispatch',
  'workers_status',
  'workers_wait',
  'workers_wait_for',
  'workers_cancel',
  'workers_list',
  'workers_lint',
  'workers_approve',
  'workers_follow_up',
  'workers_steer',
  'agent_runners',
];

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function connect(transport: StdioClientTransport | StreamableHTTPClientTransport): Promise<Client> {
  const client = new Client({ name: 'gaffer-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function stdioClient(dataDir: string): Promise<Client> {
  return connect(new StdioClientTransport({ command: BIN, args: ['--data-dir', dataDir, 'mcp'], stderr: 'ignore' }));
}

async function httpClient(
  token?: string,
): Promise<{ client: Client; url: string; engine: Awaited<ReturnType<typeof openEngine>> }> {
  const engine = await openEngine();
  const server = await serveEngine(engine, token ? { [token]: 'alice' } : {});
  // without a token of its own the client sends the data dir's secret, as the gaffer CLI does
  const client = await connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token ?? server.secret}` } },
    }),
  );
  return { client, url: server.url, engine };
}

type ToolResult = {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
};

/** The JSON of a tool result: one text item holding it, the same as structured content. */
function answer(result: unknown): any {
  const r = result as ToolResult;
  expect(r.content).toHaveLength(1);
  expect(r.content[0]?.type).toBe('text');
  const json = JSON.parse(r.content[0]?.text as string);
  expect(r.structuredContent).toEqual(json);
  return json;
}

const doors: [string, () => Promise<Client>][] = [
  ['stdio (a spawned gaffer mcp)', () => stdioClient(join(tempDir('gaffer-mcp-'), 'data'))],
  ['streamable HTTP (/mcp)', async () => (await httpClient()).client],
];

describe.each(doors)('MCP over %s', (_door, open) => {
  it('lists the 11 tools with input schemas, the guide as a prompt and a resource', async () => {
    const client = await open();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOLS].sort());
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.description?.length ?? 0).toBeGreaterThan(40);
    }
    const dispatch = tools.find((t) => t.name === 'workers_dispatch');
    expect(dispatch?.inputSchema.properties).toHaveProperty('workspace');
    expect(dispatch?.inputSchema.properties).toHaveProperty('tasks');
    // `workspace`, or `repo` for a cluster: one of the two, which JSON Schema's `required` cannot say
    expect(dispatch?.inputSchema.required).toEqual(expect.arrayContaining(['tasks']));
    expect(Object.keys(dispatch?.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(['workspace', 'repo']));
    expect(tools.find((t) => t.name === 'workers_lint')?.inputSchema.properties).toHaveProperty('tasks');
    // a job is named `id` in every answer: each tool takes it as `id` or as `job_id`, so neither alone is required
    const naming = [
      'workers_status',
      'workers_wait',
      'workers_wait_for',
      'workers_cancel',
      'workers_approve',
      'workers_follow_up',
      'workers_steer',
    ];
    for (const name of naming) {
      const schema = tools.find((t) => t.name === name)?.inputSchema as {
        properties: Record<string, { description?: string }>;
        required?: string[];
      };
      expect([name, Object.keys(schema.properties)]).toEqual([name, expect.arrayContaining(['job_id', 'id'])]);
      expect([name, schema.required ?? []]).toEqual([name, expect.not.arrayContaining(['job_id'])]);
      expect(schema.properties.id?.description).toContain('job_id');
    }
    expect(tools.find((t) => t.name === 'workers_wait')?.inputSchema).toMatchObject({
      properties: { job_id: {}, id: {}, timeout_s: {} },
    });
    expect(tools.find((t) => t.name === 'workers_wait_for')?.inputSchema.required).toEqual(['condition']);
    expect(tools.find((t) => t.name === 'workers_approve')?.inputSchema.required).toEqual(['approve']);
    expect(tools.find((t) => t.name === 'workers_follow_up')?.inputSchema.required).toEqual(['task']);
    expect(tools.find((t) => t.name === 'workers_steer')?.inputSchema.required).toEqual(['task', 'message']);

    // a schema-checking client must let through what the tool takes: plain-string tasks included
    const validator = new AjvJsonSchemaValidator();
    const check = (name: string, args: unknown) =>
      validator.getValidator(tools.find((t) => t.name === name)?.inputSchema as never)(args);
    const ws = '/abs/ws';
    for (const args of [
      { workspace: ws, tasks: ['a plain instruction'] },
      {
        workspace: ws,
        tasks: [
          'plain',
          { instruction: 'detailed', name: 'api-fix', files: ['src/api.ts'], command: 'npm run codemod' },
        ],
        verify: 'npm test',
        client_request_id: 'k-1',
      },
      { workspace: ws, tasks: [{ instruction: 'x' }], verify: true, runner: null },
    ]) {
      expect(check('workers_dispatch', args)).toMatchObject({ valid: true });
      expect(check('workers_lint', args)).toMatchObject({ valid: true });
    }
    for (const args of [
      { workspace: ws },
      { workspace: ws, tasks: [] },
      { workspace: ws, tasks: [''] },
      { workspace: ws, tasks: ['x'], endpoint: 'y' },
      { workspace: ws, tasks: [42] },
    ]) {
      expect([args, check('workers_dispatch', args).valid]).toEqual([args, false]);
    }
    expect(check('workers_wait', { job_id: 'abc', timeout_s: 30 })).toMatchObject({ valid: true });
    expect(check('workers_wait', { id: 'abc', timeout_s: 30 })).toMatchObject({ valid: true });
    expect(check('workers_steer', { id: 'abc', task: 't', message: 'use a Map' })).toMatchObject({ valid: true });
    expect(check('workers_wait_for', { job_id: 'abc', condition: 'changed' })).toMatchObject({ valid: true });
    expect(check('workers_approve', { job_id: 'abc', approve: { 'api-fix': true }, note: 'ok' })).toMatchObject({
      valid: true,
    });
    expect(check('workers_list', {})).toMatchObject({ valid: true });
    expect(check('agent_runners', {})).toMatchObject({ valid: true });
    expect(
      check('workers_follow_up', {
        job_id: 'abc',
        task: 't',
        comments: [{ file: 'src/a.ts', line: 3, text: 'rename' }],
        note: 'ok',
      }),
    ).toMatchObject({ valid: true });
    expect(check('workers_follow_up', { job_id: 'abc', task: 't', session: 'x' })).toMatchObject({ valid: false });
    expect(check('workers_steer', { job_id: 'abc', task: 't', message: 'use a Map' })).toMatchObject({ valid: true });
    expect(check('workers_steer', { job_id: 'abc', task: 't', message: 'x', worker: 'w' })).toMatchObject({
      valid: false,
    });
    expect(check('workers_steer', { job_id: 'abc', task: 't', message: '' })).toMatchObject({ valid: false });

    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toContain('coordinator-guide');
    const prompt = await client.getPrompt({ name: 'coordinator-guide' });
    expect(prompt.messages[0]?.content).toMatchObject({ type: 'text', text: COORDINATOR_GUIDE });
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain('gaffer://guide');
    const resource = await client.readResource({ uri: 'gaffer://guide' });
    expect(resource.contents[0]).toMatchObject({
      uri: 'gaffer://guide',
      mimeType: 'text/markdown',
      text: COORDINATOR_GUIDE,
    });

    const runners = answer(await client.callTool({ name: 'agent_runners', arguments: {} }));
    expect(runners.runners.map((r: { key: string }) => r.key)).toContain('shell');
  });

  it('dispatches a shell job, waits, and reads the compact answer; a refusal is isError with the error shape', async () => {
    const client = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const dispatched = answer(
      await client.callTool({
        name: 'workers_dispatch',
        arguments: {
          workspace: ws,
          tasks: [
            { name: 'fix-add', instruction: 'fix add() in src/math.js', command: FIX_ADD, files: ['src/math.js'] },
          ],
        },
      }),
    );
    expect(dispatched).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{12}$/),
      wait_again: true,
      tasks: [{ name: 'fix-add' }],
    });

    const waited = answer(
      await client.callTool({ name: 'workers_wait', arguments: { job_id: dispatched.id, timeout_s: 60 } }),
    );
    expect(waited).toMatchObject({
      met: true,
      condition: 'done',
      state: {
        id: dispatched.id,
        status: 'done',
        result: { proof: { verdict: 'proved' }, changes: { modified: ['src/math.js'] } },
      },
    });
    expect(waited.state.wait_again).toBeUndefined();

    const status = answer(await client.callTool({ name: 'workers_status', arguments: { job_id: dispatched.id } }));
    expect(status).toEqual(waited.state);
    // the answer's own name for the job works as well: `id`, as dispatch answered it
    expect(answer(await client.callTool({ name: 'workers_status', arguments: { id: dispatched.id } }))).toEqual(status);
    expect(
      answer(await client.callTool({ name: 'workers_wait', arguments: { id: dispatched.id, timeout_s: 5 } })),
    ).toMatchObject({ met: true, state: { id: dispatched.id } });
    expect(
      answer(
        await client.callTool({ name: 'workers_status', arguments: { id: dispatched.id, job_id: dispatched.id } }),
      ),
    ).toEqual(status);
    const full = answer(
      await client.callTool({ name: 'workers_status', arguments: { job_id: dispatched.id, full: true } }),
    );
    expect(full.result.workers[0].name).toBe('fix-add');
    const list = answer(await client.callTool({ name: 'workers_list', arguments: { limit: 5 } }));
    expect(list.jobs.map((j: { id: string }) => j.id)).toEqual([dispatched.id]);
    expect(list.jobs[0].result).toBeUndefined();
    const phase = answer(
      await client.callTool({
        name: 'workers_wait_for',
        arguments: { job_id: dispatched.id, condition: 'phase:settled', timeout_s: 5 },
      }),
    );
    expect(phase).toMatchObject({ met: true, condition: 'phase:settled' });
    // a condition that can no longer hold answers at once
    const asked = performance.now();
    const never = answer(
      await client.callTool({
        name: 'workers_wait_for',
        arguments: { job_id: dispatched.id, condition: 'event:never-said', timeout_s: 30 },
      }),
    );
    expect(never).toMatchObject({ met: false, condition: 'event:never-said' });
    expect(performance.now() - asked).toBeLessThan(2_000);
    const lint = answer(
      await client.callTool({
        name: 'workers_lint',
        arguments: { workspace: ws, tasks: [{ instruction: 'improve it', command: 'true' }] },
      }),
    );
    expect(lint).toMatchObject({ ok: false, codes: expect.arrayContaining(['too_short']) });

    // the yes-gate: the asks are on the answer, answered per task through the tool
    const gated = answer(
      await client.callTool({
        name: 'workers_dispatch',
        arguments: {
          workspace: makeWorkspace({ 'a.txt': 'a\n' }),
          approval: 'required',
          verify: 'none',
          tasks: [{ name: 'b', instruction: 'write b', command: 'echo b > b.txt', files: ['b.txt'] }],
        },
      }),
    );
    const asked1 = answer(
      await client.callTool({
        name: 'workers_wait_for',
        arguments: { job_id: gated.id, condition: 'phase:awaiting approval', timeout_s: 10 },
      }),
    );
    expect(asked1.state.asks.map((a: { task: string; answer: boolean | null }) => [a.task, a.answer])).toEqual([
      ['b', null],
    ]);
    const approved = answer(
      await client.callTool({ name: 'workers_approve', arguments: { id: gated.id, approve: { b: true }, note: 'go' } }),
    );
    expect(approved.asks[0]).toMatchObject({ task: 'b', answer: true, note: 'go' });
    const gatedEnd = answer(
      await client.callTool({ name: 'workers_wait', arguments: { job_id: gated.id, timeout_s: 60 } }),
    );
    expect(gatedEnd.state.status).toBe('done');

    // refusals: one error shape, as tool results
    const refusals: [string, Record<string, unknown>, string][] = [
      [
        'workers_dispatch',
        { workspace: ws, tasks: [{ instruction: 'x', command: 'true', files: ['../outside'] }] },
        'invalid_request',
      ],
      [
        'workers_dispatch',
        { workspace: 'relative', tasks: [{ instruction: 'x', command: 'true' }] },
        'invalid_request',
      ],
      [
        'workers_dispatch',
        { workspace: ws, tasks: [{ instruction: 'x', command: 'true' }], endpoint: 'http://x' },
        'invalid_request',
      ],
      [
        'workers_dispatch',
        { workspace: ws, tasks: [{ instruction: 'x', command: 'true' }], runner: 'shell', reviewer: true },
        'invalid_request',
      ],
      // a remote repository is a cluster's (gaffer serve --queue), and never with a workspace too
      [
        'workers_dispatch',
        { tasks: [{ instruction: 'x', command: 'true' }], repo: { url: 'https://example.com/r.git', ref: 'main' } },
        'not_supported',
      ],
      [
        'workers_dispatch',
        {
          workspace: ws,
          tasks: [{ instruction: 'x', command: 'true' }],
          repo: { url: 'https://example.com/r.git', ref: 'main' },
        },
        'invalid_request',
      ],
      ['workers_dispatch', { workspace: ws, tasks: ['no command'] }, 'no_runner'],
      ['workers_dispatch', { workspace: ws, tasks: [{ instruction: 'x', runner: 'codex' }] }, 'runner_disabled'],
      ['workers_status', { job_id: 'ffffffffffff' }, 'not_found'],
      ['workers_status', {}, 'invalid_request'],
      ['workers_status', { id: dispatched.id, job_id: 'ffffffffffff' }, 'invalid_request'],
      ['workers_cancel', { id: 'ffffffffffff' }, 'not_found'],
      ['workers_wait', { job_id: dispatched.id, timeout_s: 601 }, 'invalid_request'],
      ['workers_wait_for', { job_id: dispatched.id, condition: 'soon' }, 'invalid_request'],
      ['workers_cancel', { job_id: dispatched.id }, 'conflict'],
      ['workers_approve', { job_id: dispatched.id, approve: true }, 'conflict'],
      ['workers_follow_up', { job_id: dispatched.id, task: 'fix-add' }, 'invalid_request'],
      ['workers_follow_up', { job_id: dispatched.id, task: 'nope', note: 'x' }, 'not_found'],
      ['workers_steer', { job_id: dispatched.id, task: 'fix-add' }, 'invalid_request'],
      ['workers_steer', { job_id: dispatched.id, task: 'nope', message: 'x' }, 'not_found'],
      ['workers_list', { status: 'nonsense' }, 'invalid_request'],
      ['workers_list', { limit: 0 }, 'invalid_request'],
      ['no_such_tool', {}, 'not_found'],
    ];
    for (const [name, args, code] of refusals) {
      const result = (await client.callTool({ name, arguments: args })) as ToolResult;
      expect([name, result.isError]).toEqual([name, true]);
      const body = JSON.parse(result.content[0]?.text as string);
      expect([name, body]).toEqual([name, { error: expect.objectContaining({ code, message: expect.any(String) }) }]);
      expect(result.structuredContent).toEqual(body);
    }
    const unnamed = JSON.parse(
      ((await client.callTool({ name: 'workers_status', arguments: {} })) as ToolResult).content[0]?.text as string,
    );
    expect(unnamed.error).toMatchObject({ field: 'job_id', message: expect.stringContaining('`id`') });
    // a relative workspace would be gaffer's own folder, not the caller's: the refusal says what to send
    const relative = JSON.parse(
      (
        (await client.callTool({
          name: 'workers_dispatch',
          arguments: { workspace: '.', tasks: [{ instruction: 'x', command: 'true' }] },
        })) as ToolResult
      ).content[0]?.text as string,
    );
    expect(relative.error).toMatchObject({
      code: 'invalid_request',
      field: 'workspace',
      message: expect.stringMatching(
        /must be an absolute path .*working directory, not the caller's.*send the full path/,
      ),
    });
    const all = answer(await client.callTool({ name: 'workers_list', arguments: {} }));
    expect(all.jobs).toHaveLength(2);

    // review fed back: a new job linked to the task it follows
    const followed = answer(
      await client.callTool({
        name: 'workers_follow_up',
        arguments: {
          id: dispatched.id,
          task: 'fix-add',
          comments: [{ file: 'src/math.js', line: 1, text: 'name the function add' }],
        },
      }),
    );
    expect(followed).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{12}$/),
      follow_up: { job: dispatched.id, task: 'fix-add', resumed: false },
      tasks: [{ name: 'fix-add', runner: 'shell' }],
    });
    const followedEnd = answer(
      await client.callTool({ name: 'workers_wait', arguments: { job_id: followed.id, timeout_s: 60 } }),
    );
    expect(followedEnd.state).toMatchObject({
      follow_up: { job: dispatched.id, task: 'fix-add' },
      result: { verification: { ran: true } },
    });

    // a steer to a task whose job has ended: its follow-up starts at once, named in the answer
    const steered = answer(
      await client.callTool({
        name: 'workers_steer',
        arguments: { id: followed.id, task: 'fix-add', message: 'keep add() pure' },
      }),
    );
    expect(steered).toMatchObject({
      id: expect.stringMatching(/^st-[0-9a-f]{8}$/),
      delivery: 'queued_as_follow_up',
      job_id: followed.id,
      task: 'fix-add',
      waiting: 0,
      follow_up_job: expect.stringMatching(/^[0-9a-f]{12}$/),
    });
    const steeredEnd = answer(
      await client.callTool({ name: 'workers_wait', arguments: { job_id: steered.follow_up_job, timeout_s: 60 } }),
    );
    expect(steeredEnd.state).toMatchObject({ follow_up: { job: followed.id, task: 'fix-add', resumed: false } });
  });
});

describe('MCP waits', () => {
  it('workers_wait sends progress notifications while it waits (stdio and HTTP at once)', async () => {
    const stdio = await stdioClient(join(tempDir('gaffer-mcp-'), 'data'));
    const { client: http } = await httpClient();
    const run = async (client: Client) => {
      const ws = makeWorkspace({ 'a.txt': 'a\n' });
      const job = answer(
        await client.callTool({
          name: 'workers_dispatch',
          arguments: {
            workspace: ws,
            verify: 'none',
            tasks: [{ instruction: 'sleep', command: 'sleep 12; echo b > b.txt' }],
          },
        }),
      );
      const progress: Progress[] = [];
      const started = performance.now();
      const waited = answer(
        await client.callTool({ name: 'workers_wait', arguments: { job_id: job.id, timeout_s: 30 } }, undefined, {
          onprogress: (p) => progress.push(p),
          timeout: 60_000,
        }),
      );
      expect(waited).toMatchObject({ met: true, state: { status: 'done' } });
      expect(performance.now() - started).toBeGreaterThan(9_000);
      expect(progress.length).toBeGreaterThanOrEqual(1);
      expect(progress[0]).toMatchObject({
        progress: expect.any(Number),
        total: 30,
        message: expect.stringContaining('running'),
      });
      expect(progress[0]?.progress).toBeGreaterThanOrEqual(9);
    };
    await Promise.all([run(stdio), run(http)]);
  }, 40_000);

  it('a running job answers wait_again with its progress, phase and ceiling_s; /mcp obeys owners', async () => {
    const { client, engine } = await httpClient('tok-a');
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const job = answer(
      await client.callTool({
        name: 'workers_dispatch',
        arguments: { workspace: ws, verify: 'none', tasks: [{ instruction: 'sleep', command: 'sleep 30' }] },
      }),
    );
    expect(job.owner).toBe('alice');
    const waited = answer(
      await client.callTool({ name: 'workers_wait', arguments: { job_id: job.id, timeout_s: 0.5 } }),
    );
    expect(waited).toMatchObject({
      met: false,
      state: { wait_again: true, phase: expect.any(String), progress: { 'worker-1': expect.any(Object) } },
    });
    expect(waited.state.ceiling_s).toBeGreaterThan(0);
    const cancelled = answer(await client.callTool({ name: 'workers_cancel', arguments: { job_id: job.id } }));
    expect(['cancelling', 'cancelled']).toContain(cancelled.status);
    await engine.settled(job.id);
    // another owner's job is not there
    const { job: other } = engine.submit(
      { workspace: makeWorkspace({ 'b.txt': 'b' }), verify: 'none', tasks: [{ instruction: 'x', command: 'true' }] },
      { owner: 'bob' },
    );
    const hidden = (await client.callTool({ name: 'workers_status', arguments: { job_id: other.id } })) as ToolResult;
    expect(hidden.isError).toBe(true);
    expect(JSON.parse(hidden.content[0]?.text as string).error.code).toBe('not_found');
    await engine.settled(other.id);
    expect(
      answer(await client.callTool({ name: 'workers_list', arguments: {} })).jobs.map((j: { id: string }) => j.id),
    ).toEqual([job.id]);
  });
});

describe('MCP clients that go away', () => {
  it('a client that disconnects during workers_wait over /mcp leaves no waiter behind', async () => {
    const { client, url, engine } = await httpClient();
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const job = answer(
      await client.callTool({
        name: 'workers_dispatch',
        arguments: { workspace: ws, verify: 'none', tasks: [{ instruction: 'sleep', command: 'sleep 30' }] },
      }),
    );
    const pending = client
      .callTool({ name: 'workers_wait', arguments: { job_id: job.id, timeout_s: 120 } })
      .catch((err: unknown) => err);
    const health = async () => (await (await fetch(`${url}/api/health`)).json()) as { waiters: number; timers: number };
    for (let i = 0; i < 100 && (await health()).waiters === 0; i++) await new Promise((r) => setTimeout(r, 30));
    expect((await health()).waiters).toBe(1);
    await client.close(); // the transport drops its connections
    expect(await pending).toBeInstanceOf(Error);
    let waiters = 1;
    for (let i = 0; i < 100 && (waiters = (await health()).waiters) > 0; i++)
      await new Promise((r) => setTimeout(r, 30));
    expect(waiters).toBe(0);
    engine.cancel(job.id);
    await engine.settled(job.id);
  });
});
