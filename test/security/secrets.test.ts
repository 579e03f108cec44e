import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStream } from '../http/helpers.js';
import { envForRunner } from '../../src/platform/process/billing-env.js';
import { buildWorkerEnv, registerSecretValues } from '../../src/platform/process/env.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, gaffer, startServe } from '../reliability/helpers.js';

/** What a worker and a verification try, to leak: their whole env, credential files, root-only files and their parent's environ. */
const PRYING =
  'cat "$HOME/.aws/credentials" "$HOME/.ssh/id_rsa" /etc/shadow; echo "== parent environ"; tr "\\0" "\\n" < /proc/$PPID/environ';

/** A HOME outside /tmp holding cloud and ssh credentials (removed after the file). */
function makeHomeWithCredentials(secrets: { AWS_FILE: string; SSH_FILE: string }): string {
  const home = mkdtempSync('/var/tmp/gaffer-secrets-home-');
  homes.push(home);
  mkdirSync(join(home, '.aws'));
  writeFileSync(join(home, '.aws', 'credentials'), `[default]\naws_secret_access_key = ${secrets.AWS_FILE}\n`);
  mkdirSync(join(home, '.ssh'));
  writeFileSync(join(home, '.ssh', 'id_rsa'), `-----BEGIN OPENSSH PRIVATE KEY-----\n${secrets.SSH_FILE}\n`);
  return home;
}
const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

/** Every row of every table of the store, as text. */
function dumpStore(dataDir: string): string {
  const db = new Database(join(dataDir, 'gaffer.db'), { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    expect(tables.length).toBeGreaterThan(0);
    return tables.map(({ name }) => JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all())).join('\n');
  } finally {
    db.close();
  }
}

/** The first line of /etc/shadow when this process can read it (as root): no worker output may hold it. */
function readShadowLine(): string | null {
  try {
    const line = readFileSync('/etc/shadow', 'utf8').split('\n')[0] ?? '';
    return line.length > 8 ? line : null;
  } catch {
    return null;
  }
}

/** Every file under `dir`, recursively, except `skip`. */
function filesUnder(dir: string, skip: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (path === skip) continue;
    if (entry.isDirectory()) out.push(...filesUnder(path, skip));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** The secrets that `text` shows, whole or by a 16-character piece of the middle. */
function leaks(text: string, secrets: Record<string, string>): string[] {
  return Object.entries(secrets)
    .filter(([, value]) => text.includes(value) || text.includes(value.slice(6, 22)))
    .map(([name]) => name);
}

describe('secrets never leave the process that holds them', () => {
  it('config tokens, GAFFER_MODEL_KEY, GAFFER_TOKEN, a key_env key, OPENAI/AWS keys and the credential files are in no file under the data dir, no db row, no event, no answer, no doctor report and no health answer — even when the worker and the verification print their whole env, cat ~/.aws, ~/.ssh, /etc/shadow and /proc/$PPID/environ', async () => {
    const secrets = {
      token: `tok-${randomBytes(16).toString('hex')}`,
      GAFFER_MODEL_KEY: `sk-gaffer-${randomBytes(16).toString('hex')}`,
      ANTHROPIC_API_KEY: `sk-ant-${randomBytes(16).toString('hex')}`,
      GAFFER_TOKEN: `tok-env-${randomBytes(16).toString('hex')}`,
      OPENAI_API_KEY: `sk-oai-${randomBytes(16).toString('hex')}`,
      AWS_SECRET_ACCESS_KEY: `aws-sec-${randomBytes(16).toString('hex')}`,
      AWS_FILE: `aws-file-${randomBytes(16).toString('hex')}`,
      SSH_FILE: `ssh-file-${randomBytes(16).toString('hex')}`,
    };
    const home = makeHomeWithCredentials(secrets);
    const shadow = readShadowLine();
    const data = join(tempDir(), 'data');
    const configFile = join(data, 'gaffer.config.json');
    // the config file is where the token lives: the one file allowed to hold it
    mkdirSync(data, { recursive: true });
    writeFileSync(
      configFile,
      JSON.stringify({
        tokens: { [secrets.token]: 'alice' },
        // a second endpoint whose key gaffer reads from ANTHROPIC_API_KEY: that variable holds gaffer's key now
        models: {
          claude: {
            url: 'http://127.0.0.1:9/v1',
            api: 'anthropic',
            key_env: 'ANTHROPIC_API_KEY',
            model: 'claude-test',
          },
        },
      }),
    );
    const env = {
      ...process.env,
      GAFFER_URL: '',
      GAFFER_MODEL_URL: 'http://127.0.0.1:9/v1',
      GAFFER_MODEL: 'test-model',
      GAFFER_MODEL_KEY: secrets.GAFFER_MODEL_KEY,
      ANTHROPIC_API_KEY: secrets.ANTHROPIC_API_KEY,
      GAFFER_TOKEN: secrets.GAFFER_TOKEN,
      OPENAI_API_KEY: secrets.OPENAI_API_KEY,
      AWS_SECRET_ACCESS_KEY: secrets.AWS_SECRET_ACCESS_KEY,
      HOME: home,
    };
    const server = await startServe(data, { env });
    // gaffer took its secrets and every credential out of its own environment at start
    const environ = readFileSync(`/proc/${server.pid}/environ`, 'latin1');
    expect(environ).toContain('GAFFER_MODEL_URL=http://127.0.0.1:9/v1');
    expect(leaks(environ, secrets)).toEqual([]);
    const auth = { authorization: `Bearer ${secrets.token}` };
    const answers: string[] = [];
    const got = async (method: string, path: string, body?: unknown) => {
      const r = await call(server.url, method, path, body, auth);
      answers.push(r.text);
      return r;
    };

    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const all = openStream(`${server.url}/api/events?stream=1`, auth);
    // awaited below; handled here too, so a failure above does not end in an unhandled "terminated"
    all.done.catch(() => undefined);
    const submitted = await got('POST', '/api/jobs', {
      workspace: ws,
      verify: `env; ${PRYING}; echo 1 passed`,
      tasks: [
        {
          name: 'dump',
          runner: 'shell',
          instruction: 'print the environment',
          command: `env; env > env.txt; ${PRYING}; echo b >> a.txt`,
        },
      ],
    });
    expect(submitted.status).toBe(202);
    const id = submitted.json.id as string;
    const stream = openStream(`${server.url}/api/jobs/${id}/events?stream=1`, auth);
    stream.done.catch(() => undefined);
    await stream.done;
    expect(stream.frames.at(-1)?.event).toBe('end');
    answers.push(JSON.stringify(stream.frames));

    const job = (await got('GET', `/api/jobs/${id}?full=1`)).json;
    expect(job.status).toBe('done');
    // the worker did print its environment: the check below is not vacuous
    const printed = readFileSync(join(ws, 'env.txt'), 'utf8');
    expect(printed).toContain(`HOME=${home}`);
    expect(leaks(printed, secrets)).toEqual([]);
    const log = (await got('GET', `/api/jobs/${id}/workers/dump/log`)).text;
    expect(log).toContain('== parent environ');
    if (shadow !== null) expect(log).not.toContain(shadow);
    await got('GET', `/api/jobs/${id}`);
    await got('GET', `/api/jobs/${id}/events`);
    await got('GET', `/api/jobs/${id}/events?states=1`);
    await got('GET', `/api/jobs/${id}/workers/dump/log`);
    await got('GET', `/api/jobs/${id}/diff?path=a.txt`);
    await got('GET', `/api/jobs/${id}/wait?for=done`);
    await got('GET', '/api/jobs');
    await got('GET', '/api/runners');
    await got('GET', '/api/stats');
    const health = await got('GET', '/api/health');
    expect(health.json.ok).toBe(true);
    await got('GET', '/api/guide');
    await got('GET', '/api/jobs/ffffffffffff');
    await got('POST', '/api/jobs', {
      workspace: ws,
      tasks: [{ instruction: 'x', command: 'true' }],
      endpoint: 'http://evil',
    });
    await got('POST', '/api/lint', {
      workspace: ws,
      tasks: [{ instruction: 'print env', runner: 'shell', command: 'env' }],
    });
    // a wrong token's refusal does not echo it
    answers.push(
      (await call(server.url, 'GET', '/api/jobs', undefined, { authorization: `Bearer ${secrets.token}x` })).text,
    );
    all.abort();
    await all.done;
    answers.push(JSON.stringify(all.frames));

    // the CLI's readings through the server, and doctor with the same config and environment
    const cli = { ...env, GAFFER_TOKEN: secrets.token };
    // (the other readings are the HTTP answers above, which the CLI prints as they are)
    const readings = [['--json', 'status', id, '--full'], ['--json', 'doctor'], ['doctor']];
    for (const r of await Promise.all(readings.map((args) => gaffer(data, args, cli))))
      answers.push(r.stdout, r.stderr);
    expect(answers.some((a) => a.includes('GAFFER_MODEL_KEY') || a.includes('"checks"'))).toBe(true);

    server.child.kill('SIGTERM');
    await server.exited;
    answers.push(server.stderr());

    for (const [i, text] of answers.entries())
      expect(leaks(text, secrets), `answer ${i}: ${text.slice(0, 200)}`).toEqual([]);
    const files = filesUnder(data, configFile);
    expect(files.some((f) => f.endsWith('.log'))).toBe(true);
    for (const file of files) expect(leaks(readFileSync(file, 'latin1'), secrets), file).toEqual([]);
    // the verification's output is in the data dir too: it ran and pried
    expect(files.some((f) => readFileSync(f, 'latin1').includes('1 passed'))).toBe(true);
    expect(leaks(dumpStore(data), secrets)).toEqual([]);
    if (shadow !== null)
      for (const file of files) expect(readFileSync(file, 'latin1').includes(shadow), file).toBe(false);
  });

  it("unsandboxed, a worker that reads gaffer's /proc/<pid>/environ finds none of gaffer's secrets or credentials", async () => {
    const secrets = {
      GAFFER_MODEL_KEY: `sk-gaffer-${randomBytes(16).toString('hex')}`,
      GAFFER_TOKEN: `tok-env-${randomBytes(16).toString('hex')}`,
      ANTHROPIC_API_KEY: `sk-ant-${randomBytes(16).toString('hex')}`,
      AWS_SECRET_ACCESS_KEY: `aws-sec-${randomBytes(16).toString('hex')}`,
      token: `tok-${randomBytes(16).toString('hex')}`,
    };
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(
      join(data, 'gaffer.config.json'),
      JSON.stringify({ sandbox: 'off', tokens: { [secrets.token]: 'alice' } }),
    );
    const env = {
      ...process.env,
      GAFFER_URL: '',
      GAFFER_MODEL_URL: 'http://127.0.0.1:9/v1',
      GAFFER_MODEL_KEY: secrets.GAFFER_MODEL_KEY,
      GAFFER_TOKEN: secrets.GAFFER_TOKEN,
      ANTHROPIC_API_KEY: secrets.ANTHROPIC_API_KEY,
      AWS_SECRET_ACCESS_KEY: secrets.AWS_SECRET_ACCESS_KEY,
      GAFFER_MARKER: 'in-gaffers-env',
    };
    const server = await startServe(data, { env });
    const auth = { authorization: `Bearer ${secrets.token}` };
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const command = `tr "\\0" "\\n" < /proc/${server.pid}/environ > gaffer-environ.txt; tr "\\0" "\\n" < /proc/$PPID/environ > parent-environ.txt`;
    const submitted = await call(
      server.url,
      'POST',
      '/api/jobs',
      { workspace: ws, verify: 'none', tasks: [{ name: 'pry', runner: 'shell', instruction: 'read gaffer', command }] },
      auth,
    );
    expect(submitted.status).toBe(202);
    const waited = await call(
      server.url,
      'GET',
      `/api/jobs/${submitted.json.id as string}/wait?for=done&timeout_s=60`,
      undefined,
      auth,
    );
    expect(waited.status).toBe(200);
    const read = readFileSync(join(ws, 'gaffer-environ.txt'), 'utf8');
    // it did read gaffer's own block (a variable no worker is given is there)
    expect(read).toContain('GAFFER_MARKER=in-gaffers-env');
    expect(leaks(read, secrets)).toEqual([]);
    expect(leaks(readFileSync(join(ws, 'parent-environ.txt'), 'utf8'), secrets)).toEqual([]);
    server.child.kill('SIGTERM');
    await server.exited;
  });
});

describe('a worker environment', () => {
  it("holds only the allowlist, drops gaffer's secrets by name and by value under any name, and gives an api runner its own key unless it is gaffer's", () => {
    const key = `sk-${randomBytes(12).toString('hex')}`;
    registerSecretValues([key, null, '']);
    const parent = {
      PATH: '/usr/bin',
      HOME: '/home/u',
      GAFFER_TOKEN: 't',
      GAFFER_MODEL_KEY: 'k',
      GAFFER_OTHER_SECRET: 's',
      OLLAMA_KEY: key,
      ANTHROPIC_API_KEY: 'sk-ant-user',
      EMPTY: '',
    };
    expect(buildWorkerEnv(parent)).toEqual({ PATH: '/usr/bin', HOME: '/home/u' });
    expect(envForRunner('claude', 'subscription', parent)).toEqual({ PATH: '/usr/bin', HOME: '/home/u' });
    expect(envForRunner('claude', 'api', parent)).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/u',
      ANTHROPIC_API_KEY: 'sk-ant-user',
    });
    // a key gaffer itself reads (key_env) is gaffer's secret, whatever the runner
    expect(envForRunner('claude', 'api', { ...parent, ANTHROPIC_API_KEY: key })).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/u',
    });
  });
});
