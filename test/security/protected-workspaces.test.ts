import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { vetWorkspace, workspacesHolding, type WorkspaceRules } from '../../src/engine/admission/workspace-vetting.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { eventually, openEngine } from '../http/helpers.js';
import { BIN, call, gaffer, startServe } from '../reliability/helpers.js';
import { refusal } from '../helpers/refusal.js';

/** A home, a data dir, a config folder and a protected folder, all under one temp root. */
function layout() {
  const root = tempDir('gaffer-protect-');
  const dirs = {
    root,
    home: join(root, 'home'),
    data: join(root, 'data'),
    conf: join(root, 'conf'),
    vault: join(root, 'vault'),
    projects: join(root, 'home', 'projects'),
  };
  for (const d of [dirs.home, dirs.data, dirs.conf, dirs.vault, dirs.projects]) mkdirSync(d, { recursive: true });
  for (const name of ['.ssh', '.gnupg', '.config']) mkdirSync(join(dirs.home, name, 'inner'), { recursive: true });
  mkdirSync(join(dirs.vault, 'keys'));
  mkdirSync(join(dirs.conf, 'beside'));
  mkdirSync(join(dirs.projects, 'app'));
  writeFileSync(join(dirs.conf, 'gaffer.config.json'), '{}');
  const rules: WorkspaceRules = {
    dataDir: dirs.data,
    configFile: join(dirs.conf, 'gaffer.config.json'),
    protectedPaths: [dirs.vault],
    home: dirs.home,
  };
  return { ...dirs, rules };
}

describe('protected workspaces (issue 11)', () => {
  it('refuses ~/.ssh, ~/.gnupg, ~/.config (being one, inside one, containing one), the data dir, protected_paths, the config folder — naming the field, the value and why', () => {
    const l = layout();
    const refused: [string, RegExp][] = [
      [join(l.home, '.ssh'), /\.ssh \(protected/],
      [join(l.home, '.ssh', 'inner'), /\.ssh \(protected/],
      [join(l.home, '.gnupg'), /\.gnupg \(protected/],
      [join(l.home, '.config', 'inner'), /\.config \(protected/],
      [l.home, /home folder/],
      [l.data, /data dir/],
      [l.vault, /protected_paths/],
      [join(l.vault, 'keys'), /protected_paths/],
      [l.root, /home folder/],
      [l.conf, /config file/],
    ];
    for (const [workspace, why] of refused) {
      const error = refusal(() => vetWorkspace(workspace, l.rules));
      expect([workspace, error.code, error.field]).toEqual([workspace, 'invalid_request', 'workspace']);
      expect(error.message).toMatch(why);
      expect(error.message).toContain(JSON.stringify(workspace));
    }
    // a folder holding a protected path, reached through a symlink, is still refused
    const link = join(tempDir('gaffer-protect-link-'), 'link');
    symlinkSync(l.vault, link);
    expect(refusal(() => vetWorkspace(join(link, 'keys'), l.rules)).message).toContain('protected_paths');
    // a protected path that does not exist yet counts too
    expect(
      refusal(() => vetWorkspace(l.projects, { ...l.rules, protectedPaths: [join(l.projects, 'other', 'not-yet')] }))
        .message,
    ).toContain('protected_paths');
    // a data dir elsewhere: the folder holding it is refused
    expect(refusal(() => vetWorkspace(l.root, { dataDir: l.data, home: join(tempDir(), 'home') })).message).toContain(
      'must not contain gaffer',
    );
  });

  it('accepts ordinary folders: projects under the home, a folder beside the config file, temp dirs', () => {
    const l = layout();
    for (const ok of [
      join(l.projects, 'app'),
      l.projects,
      join(l.conf, 'beside'),
      makeWorkspace({ 'a.txt': 'a' }),
      tempDir('gaffer-ok-'),
    ]) {
      expect(vetWorkspace(ok, l.rules)).toBe(ok);
    }
    // the defaults of a real engine take /tmp and /var/tmp workspaces
    const varTmp = join('/var/tmp', `gaffer-protect-${process.pid}-${Date.now()}`);
    mkdirSync(varTmp);
    expect(vetWorkspace(varTmp, { dataDir: l.data })).toBe(varTmp);
  });

  it('a parent of a live job’s workspace the request comes from (its cwd) is refused; the same folder from elsewhere, or a folder inside, is not', () => {
    const parent = tempDir('gaffer-parent-');
    const live = join(parent, 'mid', 'live');
    mkdirSync(join(live, 'src'), { recursive: true });
    const rules = (cwd: string | null): WorkspaceRules => ({
      dataDir: join(tempDir(), 'data'),
      spawnedFrom: workspacesHolding(cwd, [live]),
    });
    const error = refusal(() => vetWorkspace(parent, rules(join(live, 'src'))));
    expect([error.code, error.field]).toEqual(['invalid_request', 'workspace']);
    expect(error.message).toContain(`must not be a parent of ${live}`);
    expect(refusal(() => vetWorkspace(dirname(live), rules(live))).message).toContain('parent of');
    expect(vetWorkspace(parent, rules(null))).toBe(parent);
    expect(vetWorkspace(parent, rules(tempDir()))).toBe(parent);
    expect(vetWorkspace(live, rules(live))).toBe(live);
    expect(vetWorkspace(join(live, 'src'), rules(live))).toBe(join(live, 'src'));
    expect(workspacesHolding('relative/path', [live])).toEqual([]);
  });

  it('through a real gaffer serve: protected_paths, ~/.ssh of its HOME and the config folder are refused over HTTP, and nothing is created', async () => {
    const l = layout();
    writeFileSync(join(l.data, 'gaffer.config.json'), JSON.stringify({ protected_paths: [l.vault] }));
    const server = await startServe(l.data, { env: { ...process.env, GAFFER_URL: '', HOME: l.home } });
    for (const workspace of [join(l.vault, 'keys'), join(l.home, '.ssh', 'inner'), join(l.home, '.config'), l.data]) {
      const r = await call(server.url, 'POST', '/api/jobs', {
        workspace,
        verify: 'none',
        tasks: [{ instruction: 'x', command: 'true' }],
      });
      expect([workspace, r.status, r.json.error.code, r.json.error.field]).toEqual([
        workspace,
        400,
        'invalid_request',
        'workspace',
      ]);
      expect(r.json.error.message).toContain(JSON.stringify(workspace));
    }
    expect((await call(server.url, 'GET', '/api/jobs')).json.jobs).toEqual([]);
    const ok = await call(server.url, 'POST', '/api/jobs', {
      workspace: join(l.projects, 'app'),
      verify: 'none',
      tasks: [{ instruction: 'x', command: 'echo a > a.txt' }],
    });
    expect(ok.status).toBe(202);
  });

  it('a worker that runs gaffer dispatch for the folder around its workspace is refused (exit 2), and no job is created', async () => {
    const data = join(tempDir(), 'data');
    // no sandbox: the worker reaches the server and its secret, like any other process of the user's
    const server = await startServe(data, { env: { ...process.env, GAFFER_URL: '', GAFFER_SANDBOX: 'off' } });
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const around = dirname(ws);
    const command = `${BIN} --data-dir ${data} --json dispatch --workspace ${around} --verify none --task widen --command 'echo pwned > pwned.txt' 2> refusal.json; echo "exit=$?" > exit.txt`;
    const submitted = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'widen my reach', command }],
    });
    expect(submitted.status).toBe(202);
    const waited = await call(server.url, 'GET', `/api/jobs/${submitted.json.id}/wait?timeout_s=120`);
    expect(waited.json.met).toBe(true);
    expect(readFileSync(join(ws, 'exit.txt'), 'utf8').trim()).toBe('exit=2');
    const refusalBody = JSON.parse(readFileSync(join(ws, 'refusal.json'), 'utf8').trim().split('\n').at(-1) as string);
    expect(refusalBody).toMatchObject({
      error: {
        code: 'invalid_request',
        field: 'workspace',
        message: expect.stringContaining(`must not be a parent of ${ws}`),
      },
    });
    expect((await call(server.url, 'GET', '/api/jobs')).json.jobs).toHaveLength(1);
    // the same dispatch from outside any live job's workspace is the user's own: accepted
    const own = await gaffer(data, [
      '--json',
      'dispatch',
      '--workspace',
      around,
      '--verify',
      'none',
      '--task',
      'mine',
      '--command',
      'echo mine > mine.txt',
    ]);
    expect(own.code).toBe(0);
  });

  it('MCP on stdio sends its cwd: inside a live job’s workspace, a dispatch for its parent is isError naming workspace', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'hold the workspace', command: 'sleep 30' }],
    });
    await eventually(() => engine.get(job.id).status === 'running', 20_000, 'the live job');
    const client = new Client({ name: 'protect-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: BIN,
        args: ['--data-dir', engine.dataDir, 'mcp'],
        cwd: ws,
        stderr: 'ignore',
      }),
    );
    try {
      const refused = (await client.callTool({
        name: 'workers_dispatch',
        arguments: { workspace: dirname(ws), verify: 'none', tasks: [{ instruction: 'x', command: 'true' }] },
      })) as {
        isError?: boolean;
        structuredContent?: { error: { code: string; field: string; message: string } };
      };
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent?.error).toMatchObject({
        code: 'invalid_request',
        field: 'workspace',
        message: expect.stringContaining('parent of'),
      });
      expect(engine.list()).toHaveLength(1);
    } finally {
      await client.close();
      engine.cancel(job.id);
      await engine.settled(job.id);
    }
  });

  it('the engine wires the config: a real Engine refuses its protected_paths and the config file folder', async () => {
    const l = layout();
    const engine = await Engine.open({
      dataDir: l.data,
      protect: { configFile: join(l.conf, 'gaffer.config.json'), protectedPaths: [l.vault] },
    });
    try {
      for (const workspace of [join(l.vault, 'keys'), l.conf]) {
        const error = refusal(() =>
          engine.submit({ workspace, verify: 'none', tasks: [{ instruction: 'x', command: 'true' }] }),
        );
        expect([workspace, error.field]).toEqual([workspace, 'workspace']);
      }
      expect(engine.list()).toEqual([]);
    } finally {
      await engine.close();
    }
  });
});
