import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GafferError } from '../../src/domain/errors.js';
import { parseJobRequest } from '../../src/domain/request.js';
import { Engine } from '../../src/engine/engine.js';
import { envForRunner, keysRemovedFor, PAID_API_KEYS } from '../../src/platform/process/billing-env.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const PARENT: NodeJS.ProcessEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/u',
  ANTHROPIC_API_KEY: 'sk-ant-1',
  ANTHROPIC_AUTH_TOKEN: 'tok-2',
  OPENAI_API_KEY: 'sk-3',
  GEMINI_API_KEY: 'g-4',
  GOOGLE_API_KEY: 'g-5',
  DASHSCOPE_API_KEY: 'd-6',
  OPENROUTER_API_KEY: 'or-7',
  CLAUDE_CODE_USE_BEDROCK: '1',
  GAFFER_TOKEN: 'gaffer-token-8',
  GAFFER_MODEL_KEY: 'gaffer-key-9',
  GIT_DIR: '/elsewhere/.git',
  MY_PROJECT_SETTING: 'kept',
};

describe('envForRunner', () => {
  it('a subscription runner gets no paid-API key (nor gaffer secrets, nor GIT_DIR, nor what is not on the allowlist)', () => {
    for (const runner of ['claude', 'codex', 'gemini', 'qwen', 'opencode']) {
      const env = envForRunner(runner, 'subscription', PARENT);
      for (const name of [...PAID_API_KEYS, 'GAFFER_TOKEN', 'GAFFER_MODEL_KEY', 'GIT_DIR'])
        expect(env[name]).toBeUndefined();
      expect(env).toEqual({ PATH: '/usr/bin:/bin', HOME: '/home/u' });
      expect(Object.values(env).some((v) => /^(sk-|tok-|g-|d-|or-|gaffer-)/.test(v ?? ''))).toBe(false);
    }
    // claude's own switch to a paid cloud API goes too
    expect(envForRunner('claude', 'subscription', PARENT).CLAUDE_CODE_USE_BEDROCK).toBeUndefined();
  });

  it("an api runner keeps its own API keys (it is meant to use them), not another vendor's, and never gaffer secrets", () => {
    const env = envForRunner('codex', 'api', PARENT);
    expect(env).toMatchObject({ OPENAI_API_KEY: 'sk-3' });
    expect(env.ANTHROPIC_API_KEY).toBeUndefined();
    // opencode picks its provider by the key it finds: it is given all of them
    expect(envForRunner('opencode', 'api', PARENT)).toMatchObject({
      OPENAI_API_KEY: 'sk-3',
      ANTHROPIC_API_KEY: 'sk-ant-1',
      OPENROUTER_API_KEY: 'or-7',
    });
    expect(env.GAFFER_TOKEN).toBeUndefined();
    expect(env.GAFFER_MODEL_KEY).toBeUndefined();
    expect(keysRemovedFor('builtin', 'free')).toEqual([]);
  });

  it('does not change the parent env', () => {
    const parent = { ...PARENT };
    envForRunner('claude', 'subscription', parent);
    expect(parent).toEqual(PARENT);
  });
});

describe('a request can never name an endpoint URL or an environment variable', () => {
  const ok = { workspace: '/tmp/ws', tasks: [{ instruction: 'do it', command: 'true' }] };
  const parse = (body: unknown) => parseJobRequest(body, { defaultRunner: null, available: ['shell'] });

  it.each(['endpoint', 'model_url', 'base_url', 'env', 'api_key'])(
    'refuses "%s" at job and task level as an unknown key, naming it',
    (key) => {
      const value = key === 'env' ? { OPENAI_BASE_URL: 'https://evil.example.com' } : 'https://evil.example.com/v1';
      for (const [body, field] of [
        [{ ...ok, [key]: value }, key],
        [{ ...ok, tasks: [{ instruction: 'do it', command: 'true', [key]: value }] }, `tasks[0].${key}`],
      ] as const) {
        let error: unknown = null;
        try {
          parse(body);
        } catch (err) {
          error = err;
        }
        expect(error).toBeInstanceOf(GafferError);
        expect(error).toMatchObject({
          code: 'invalid_request',
          field,
          message: expect.stringContaining(`unknown key "${key}"`),
        });
      }
    },
  );
});

describe('secrets never leave gaffer', () => {
  const SECRET = 'sk-test-SECRET-b7d1e9a04c';
  const TOKEN = 'gaffer-tok-SECRET-51aa3f';
  const saved = { key: process.env.GAFFER_MODEL_KEY, token: process.env.GAFFER_TOKEN };
  let engine: Engine | null = null;
  afterEach(async () => {
    await engine?.close();
    engine = null;
    for (const [name, value] of [
      ['GAFFER_MODEL_KEY', saved.key],
      ['GAFFER_TOKEN', saved.token],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  function filesUnder(dir: string): string[] {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? filesUnder(path) : [path];
    });
  }

  it('a shell job that prints its whole env: no key in its log, events, compact or full answer, or anywhere in the data dir', async () => {
    process.env.GAFFER_MODEL_KEY = SECRET;
    process.env.GAFFER_TOKEN = TOKEN;
    const dataDir = join(tempDir('gaffer-data-'), 'data');
    engine = await Engine.open({ dataDir });
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'env; echo "verify key=[$GAFFER_MODEL_KEY]"',
      tasks: [
        {
          instruction: 'print the env',
          command: 'env; echo "key=[$GAFFER_MODEL_KEY] token=[$GAFFER_TOKEN]"; echo done > out.txt',
        },
      ],
    });
    await engine.settled(job.id);

    const log = engine.workerLog(job.id, 'worker-1', 1_000_000);
    // the env really was printed (so the check below can fail)
    expect(log).toContain('PATH=');
    expect(log).toContain('key=[] token=[]');
    const answers = [
      log,
      JSON.stringify(engine.get(job.id)),
      JSON.stringify(engine.get(job.id, { full: true })),
      JSON.stringify(engine.events(job.id)),
    ];
    for (const text of answers) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(TOKEN);
    }
    await engine.close();
    engine = null;
    for (const file of filesUnder(dataDir)) {
      const bytes = readFileSync(file);
      expect(bytes.includes(SECRET), file).toBe(false);
      expect(bytes.includes(TOKEN), file).toBe(false);
    }
  });
});
