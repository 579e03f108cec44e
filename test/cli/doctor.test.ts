import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { tempDir } from '../helpers/temp.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');
const SECRET = 'sk-test-SECRET-doctor-6c2f8e1a';
const TOKEN = 'tok-SECRET-doctor-0123456789';
const FILE_KEY = 'sk-test-SECRET-file-key-99aa';

/** The environment without any GAFFER_* of the machine running the tests. */
function baseEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GAFFER_')) env[k] = v;
  return { ...env, ...extra };
}

/** Runs the CLI without blocking this process (a test server here must keep answering). */
function gaffer(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 60_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code =
        err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  fix: string | null;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** An OpenAI-style models route that wants `Bearer SECRET`; records what it was sent. */
async function modelsServer(): Promise<{ url: string; seen: IncomingMessage['headers'][] }> {
  const seen: IncomingMessage['headers'][] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    if (req.url !== '/v1/models') return void res.writeHead(404).end();
    if (req.headers.authorization !== `Bearer ${SECRET}`) return void res.writeHead(401).end(`{"error":"bad key"}`);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'qwen3:8b' }, { id: 'llama3' }] }));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise((r) => server.close(r));
  return `http://127.0.0.1:${port}/v1`;
}

describe('gaffer doctor', () => {
  it('--json: the effective config with sources and every check; exit 0 when nothing fails', async () => {
    const data = join(tempDir(), 'data');
    const r = await gaffer(['--data-dir', data, '--json', 'doctor'], baseEnv({ GAFFER_MAX_PARALLEL: '3' }));
    expect(r.stderr).toBe('');
    const report = JSON.parse(r.stdout) as {
      config: { file: string | null; data_dir: string; values: Record<string, { value: unknown; source: string }> };
      checks: Check[];
    };
    expect(report.config).toMatchObject({ file: null, data_dir: data });
    expect(report.config.values['workers.max_parallel']).toEqual({ value: 3, source: 'env' });
    expect(report.config.values.sandbox).toEqual({ value: 'auto', source: 'default' });
    expect(report.config.values['runners.claude.enabled']).toEqual({ value: false, source: 'default' });
    const names = report.checks.map((c) => c.name);
    expect(names).toEqual([
      'config',
      'node',
      'git',
      'data dir',
      'sqlite',
      'runner shell',
      'runner builtin',
      'runner claude',
      'runner codex',
      'runner gemini',
      'runner qwen',
      'runner opencode',
      'sandbox',
      'network',
      'limits',
      'secrets in env',
    ]);
    for (const check of report.checks) {
      expect(Object.keys(check).sort()).toEqual(['detail', 'fix', 'name', 'status']);
      expect(['ok', 'warn', 'fail']).toContain(check.status);
    }
    const byName = Object.fromEntries(report.checks.map((c) => [c.name, c]));
    // doctor reads the store and never makes it (issue 12): a fresh data dir has none, before or after
    expect(byName.sqlite).toMatchObject({ status: 'ok', detail: expect.stringContaining('no store yet') });
    expect(existsSync(join(data, 'gaffer.db'))).toBe(false);
    expect(byName['data dir']).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/writable, [\d.]+ GiB free/),
    });
    expect(byName['runner builtin']).toMatchObject({
      status: 'warn',
      fix: expect.stringContaining('GAFFER_MODEL_URL'),
    });
    expect(byName['runner claude']).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^disabled/) });
    const probe = probeSandbox();
    expect(byName.sandbox?.status).toBe(probe.available ? 'ok' : 'warn');
    if (!probe.available) expect(byName.sandbox?.fix).toMatch(/apt-get install bubblewrap|user namespaces/);
    // the CLI took its secrets out of its environment at start, and /proc/<pid>/environ too (scrub-env.ts)
    expect(byName['secrets in env']).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/\/proc\/\d+\/environ/),
    });
    expect(report.checks.some((c) => c.status === 'fail')).toBe(false);
    expect(r.code).toBe(0);
  });

  it('checks the endpoint with the key and never prints a secret: not the key, not a token, not a file key', async () => {
    const server = await modelsServer();
    const dir = tempDir();
    const config = join(dir, 'gaffer.config.json');
    writeFileSync(
      config,
      JSON.stringify({
        tokens: { [TOKEN]: 'alice' },
        models: { backup: { url: `${server.url}`, key: FILE_KEY, model: 'llama3' } },
      }),
    );
    const env = baseEnv({ GAFFER_MODEL_URL: server.url, GAFFER_MODEL_KEY: SECRET, GAFFER_MODEL: 'qwen3:8b' });
    const text = await gaffer(['--data-dir', join(dir, 'data'), '--config', config, 'doctor'], env);
    const json = await gaffer(['--data-dir', join(dir, 'data'), '--config', config, '--json', 'doctor'], env);
    for (const out of [text.stdout, text.stderr, json.stdout, json.stderr]) {
      for (const secret of [SECRET, TOKEN, FILE_KEY]) expect(out).not.toContain(secret);
    }
    // the key was really sent (Bearer), so hiding it is not an accident of not reading it
    expect(server.seen.some((h) => h.authorization === `Bearer ${SECRET}`)).toBe(true);
    expect(text.stdout).toContain('set (from env GAFFER_MODEL_KEY)');
    expect(text.stdout).toContain('set (from file)');
    expect(text.stdout).toContain('1 set (owners: alice)');
    const report = JSON.parse(json.stdout) as { checks: Check[] };
    const endpoint = report.checks.find((c) => c.name === 'endpoint default');
    expect(endpoint).toMatchObject({ status: 'ok', detail: expect.stringContaining('qwen3:8b among them') });
    // the file's endpoint sends its own key, which this server refuses
    expect(report.checks.find((c) => c.name === 'endpoint backup')).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('the key was refused (HTTP 401)'),
    });
    expect(json.code).toBe(1);
    expect(text.code).toBe(1);
  });

  it('exit 1 when a check fails, saying what to fix: an unreachable endpoint, a broken config', async () => {
    const data = join(tempDir(), 'data');
    const down = await gaffer(
      ['--data-dir', data, 'doctor'],
      baseEnv({ GAFFER_MODEL_URL: await closedPortUrl(), GAFFER_MODEL: 'm' }),
    );
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(
      /fail\s+endpoint default\s+http:\/\/127\.0\.0\.1:\d+\/v1: unreachable \(ECONNREFUSED\)/,
    );
    expect(down.stdout).toContain('fix: start the model server, or fix the URL');
    expect(down.stdout).toMatch(/1 check\(s\) failed/);

    const dir = tempDir();
    writeFileSync(join(dir, 'gaffer.config.json'), JSON.stringify({ sandbox: 'sometimes' }));
    const broken = await gaffer(['--data-dir', dir, '--json', 'doctor'], baseEnv());
    expect(broken.code).toBe(1);
    const report = JSON.parse(broken.stdout) as { checks: Check[] };
    expect(report.checks[0]).toMatchObject({
      name: 'config',
      status: 'fail',
      detail: expect.stringContaining('sandbox'),
    });
    // the other checks still ran
    expect(report.checks.map((c) => c.name)).toContain('sqlite');
  });

  it('sandbox: required without bwrap fails and says how to enable it; an enabled agent CLI that is missing fails with its install command', async () => {
    const data = join(tempDir(), 'data');
    // no PATH: no bwrap, no git, no agent CLI (node itself is started by path)
    const r = await gaffer(
      ['--data-dir', data, '--json', 'doctor'],
      baseEnv({ PATH: '/nonexistent', GAFFER_SANDBOX: 'required', GAFFER_ENABLED_RUNNERS: 'codex' }),
    );
    expect(r.code).toBe(1);
    const byName = Object.fromEntries((JSON.parse(r.stdout) as { checks: Check[] }).checks.map((c) => [c.name, c]));
    expect(byName.sandbox).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('bwrap is not on PATH'),
      fix: 'install bubblewrap (apt-get install bubblewrap)',
    });
    expect(byName.git).toMatchObject({ status: 'warn', fix: expect.stringContaining('install git') });
    expect(byName['runner codex']).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('not installed'),
      fix: expect.stringMatching(/^npm i -g @openai\/codex@/),
    });
  });
});
