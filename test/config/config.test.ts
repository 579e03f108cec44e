import { writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GafferError } from '../../src/domain/errors.js';
import { DEFAULT_CONFIG, loadConfig } from '../../src/config/config.js';
import { describeConfig } from '../../src/config/describe-config.js';
import { Engine } from '../../src/engine/engine.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const SECRET = 'sk-test-SECRET-4f9a1c0de77b';

function dataDirWith(config: unknown, name = 'gaffer.config.json'): string {
  const dir = tempDir('gaffer-config-');
  writeFileSync(join(dir, name), typeof config === 'string' ? config : JSON.stringify(config));
  return dir;
}

function refusal(load: () => unknown): GafferError {
  try {
    load();
  } catch (err) {
    expect(err).toBeInstanceOf(GafferError);
    return err as GafferError;
  }
  throw new Error('expected a refusal');
}

describe('loadConfig', () => {
  it('defaults: sandbox auto, agent CLIs off and on subscription, shell and builtin on, no endpoint', () => {
    const { config, file, sources } = loadConfig({ dataDir: tempDir(), env: {} });
    expect(file).toBeNull();
    expect(config).toEqual(DEFAULT_CONFIG);
    expect(config.sandbox).toBe('auto');
    expect(config.runners.claude).toEqual({ enabled: false, billing: 'subscription', home: null, endpoint: null });
    expect(config.runners.opencode.enabled).toBe(false);
    expect(config.runners.builtin).toEqual({ enabled: true, billing: 'free', home: null, endpoint: null });
    expect(Object.values(sources).every((s) => s === 'default')).toBe(true);
    expect(sources['runners.codex.enabled']).toBe('default');
  });

  it('file then env: env wins, and every value says where it came from', () => {
    const dir = dataDirWith({
      workers: { max_parallel: 4 },
      sandbox: 'required',
      spec_lint: 'enforce',
      timeouts: { worker_s: 1200 },
      models: { default: { url: 'http://127.0.0.1:11434/v1/', model: 'qwen3:8b' } },
      runners: {
        claude: { enabled: true, home: '~/gaffer-claude' },
        codex: { enabled: true, billing: 'api', home: 'homes/codex' },
      },
    });
    const { config, sources, file } = loadConfig({
      dataDir: dir,
      env: {
        GAFFER_MAX_PARALLEL: '6',
        GAFFER_SANDBOX: 'off',
        GAFFER_MODEL: 'llama3',
        GAFFER_MODEL_KEY: SECRET,
        GAFFER_VERIFY_TIMEOUT_S: '600',
      },
    });
    expect(file).toBe(join(dir, 'gaffer.config.json'));
    expect(config.workers.max_parallel).toBe(6);
    expect(sources['workers.max_parallel']).toBe('env');
    expect(config.sandbox).toBe('off');
    expect(sources.sandbox).toBe('env');
    expect(config.spec_lint).toBe('enforce');
    expect(sources.spec_lint).toBe('file');
    expect(config.timeouts).toEqual({ worker_s: 1200, verify_s: 600 });
    expect([sources['timeouts.worker_s'], sources['timeouts.verify_s']]).toEqual(['file', 'env']);
    expect(config.models.default).toEqual({
      url: 'http://127.0.0.1:11434/v1',
      api: 'openai-compatible',
      model: 'llama3',
      key: SECRET,
      keyFrom: 'env GAFFER_MODEL_KEY',
    });
    expect([sources['models.default.url'], sources['models.default.model'], sources['models.default.key']]).toEqual([
      'file',
      'env',
      'env',
    ]);
    expect(config.runners.claude).toEqual({
      enabled: true,
      billing: 'subscription',
      home: join(homedir(), 'gaffer-claude'),
      endpoint: null,
    });
    expect(config.runners.codex).toEqual({
      enabled: true,
      billing: 'api',
      home: join(dir, 'homes/codex'),
      endpoint: null,
    });
    expect([
      sources['runners.claude.enabled'],
      sources['runners.claude.billing'],
      sources['runners.codex.billing'],
    ]).toEqual(['file', 'default', 'file']);
    expect(config.runners.gemini.enabled).toBe(false);
    // a loopback endpoint: builtin bills free
    expect(config.runners.builtin.billing).toBe('free');
  });

  it('reads YAML too, and GAFFER_CONFIG / --config over the data dir', () => {
    const yamlDir = dataDirWith('sandbox: off\nworkers:\n  max_parallel: 3\n', 'gaffer.config.yaml');
    expect(loadConfig({ dataDir: yamlDir, env: {} }).config).toMatchObject({
      sandbox: 'off',
      workers: { max_parallel: 3 },
    });
    const other = dataDirWith({ sandbox: 'required' });
    expect(
      loadConfig({ dataDir: yamlDir, env: { GAFFER_CONFIG: join(other, 'gaffer.config.json') } }).config.sandbox,
    ).toBe('required');
    expect(
      loadConfig({ dataDir: yamlDir, configPath: join(other, 'gaffer.config.json'), env: {} }).config.sandbox,
    ).toBe('required');
  });

  it('GAFFER_MODEL_* alone make the default endpoint; a remote one makes builtin bill api; anthropic is inferred', () => {
    const remote = loadConfig({
      dataDir: tempDir(),
      env: {
        GAFFER_MODEL_URL: 'https://api.anthropic.com/v1',
        GAFFER_MODEL: 'claude-sonnet-4-5',
        GAFFER_MODEL_KEY: SECRET,
      },
    });
    expect(remote.config.models.default).toMatchObject({
      api: 'anthropic',
      url: 'https://api.anthropic.com/v1',
      model: 'claude-sonnet-4-5',
    });
    expect(remote.config.runners.builtin.billing).toBe('api');
    expect(remote.sources['runners.builtin.billing']).toBe('default');
    const configured = loadConfig({
      dataDir: dataDirWith({ runners: { builtin: { billing: 'subscription' } } }),
      env: { GAFFER_MODEL_URL: 'https://example.com/v1' },
    });
    expect(configured.config.runners.builtin.billing).toBe('subscription');
  });

  it('key_env names the variable that holds the key', () => {
    const dir = dataDirWith({
      models: { local: { url: 'http://127.0.0.1:8080/v1', key_env: 'MY_LLM_KEY', api: 'openai' } },
    });
    expect(loadConfig({ dataDir: dir, env: { MY_LLM_KEY: SECRET } }).config.models.local).toEqual({
      url: 'http://127.0.0.1:8080/v1',
      api: 'openai-compatible',
      model: null,
      key: SECRET,
      keyFrom: 'env MY_LLM_KEY (key_env)',
    });
    expect(loadConfig({ dataDir: dir, env: {} }).config.models.local?.key).toBeNull();
  });

  it('a roster entry names its endpoint among models: a builtin one on models.gateway loads; an unknown name, or a gemini endpoint for builtin, is refused naming the field, the value and the names there are', () => {
    const entry = {
      id: 'mid',
      runner: 'builtin',
      model: 'big',
      provider: 'gateway',
      billing: 'subscription',
      cost: 'mid',
      tasks: ['fix'],
    };
    const models = {
      gateway: { url: 'https://gateway.example.com/v1', key_env: 'GATEWAY_KEY', model: 'big' },
      gem: { url: 'https://gem.example.com/v1beta', api: 'gemini' },
    };
    const loaded = loadConfig({
      dataDir: dataDirWith({
        models,
        roster: { entries: [{ ...entry, endpoint: 'gateway' }], judge: { entry: 'mid' } },
      }),
      env: { GATEWAY_KEY: SECRET },
    });
    expect(loaded.config.roster?.entries[0]?.endpoint).toBe('gateway');
    expect(loaded.config.models.gateway?.key).toBe(SECRET);

    const unknown = refusal(() =>
      loadConfig({
        dataDir: dataDirWith({ models, roster: { entries: [{ ...entry, endpoint: 'gatway' }] } }),
        env: {},
      }),
    );
    expect(unknown).toMatchObject({
      field: 'roster.entries[0].endpoint',
      message: expect.stringContaining(
        'roster.entries[0].endpoint: "gatway" is not a model endpoint (models: gateway, gem) — add models.gatway with its url, or name another',
      ),
    });
    const gemini = refusal(() =>
      loadConfig({ dataDir: dataDirWith({ models, roster: { entries: [{ ...entry, endpoint: 'gem' }] } }), env: {} }),
    );
    expect(gemini).toMatchObject({
      field: 'roster.entries[0].endpoint',
      message: expect.stringContaining(
        'models.gem speaks the gemini API and the builtin agent speaks openai-compatible or anthropic — name one of gateway',
      ),
    });
    // models.default made by the environment alone counts (it is checked after GAFFER_MODEL_URL)
    expect(
      loadConfig({
        dataDir: dataDirWith({ roster: { entries: [{ ...entry, endpoint: 'default' }] } }),
        env: { GAFFER_MODEL_URL: 'http://127.0.0.1:11434/v1' },
      }).config.roster?.entries[0]?.endpoint,
    ).toBe('default');
  });

  it('GAFFER_ENABLED_RUNNERS turns exactly the agent CLIs listed on', () => {
    const dir = dataDirWith({ runners: { claude: { enabled: true } } });
    const { config, sources } = loadConfig({ dataDir: dir, env: { GAFFER_ENABLED_RUNNERS: 'codex, qwen' } });
    expect([
      config.runners.claude.enabled,
      config.runners.codex.enabled,
      config.runners.qwen.enabled,
      config.runners.gemini.enabled,
    ]).toEqual([false, true, true, false]);
    expect(sources['runners.claude.enabled']).toBe('env');
    expect(
      refusal(() => loadConfig({ dataDir: tempDir(), env: { GAFFER_ENABLED_RUNNERS: 'claude,aider' } })),
    ).toMatchObject({ field: 'GAFFER_ENABLED_RUNNERS', message: expect.stringContaining('aider') });
  });

  it.each([
    [{ sandboxx: 'off' }, 'sandboxx'],
    [{ runners: { aider: { enabled: true } } }, 'aider'],
    [{ runners: { claude: { enabled: true, api_key: 'x' } } }, 'api_key'],
    [{ models: { default: { url: 'http://x/v1', base_url: 'y' } } }, 'base_url'],
    [{ workers: { max_parallel: 2, cap: 3 } }, 'cap'],
  ])('refuses unknown keys, naming them (%#)', (config, key) => {
    const err = refusal(() => loadConfig({ dataDir: dataDirWith(config), env: {} }));
    expect(err.code).toBe('invalid_request');
    expect(err.message).toContain(`unknown key(s) ${key}`);
  });

  it.each([
    [{ sandbox: 'sometimes' }, 'sandbox'],
    [{ runners: { claude: { billing: 'free-ish' } } }, 'runners.claude.billing'],
    [{ runners: { shell: { home: '/x' } } }, 'runners.shell'],
    [{ timeouts: { worker_s: 5 } }, 'timeouts.worker_s'],
    [{ models: { default: { url: 'http://x/v1', key: 'a', key_env: 'B' } } }, 'models.default.key'],
  ])('refuses bad values naming the field (%#)', (config, field) => {
    expect(refusal(() => loadConfig({ dataDir: dataDirWith(config), env: {} })).field).toBe(field);
  });

  it.each([
    [{ GAFFER_SANDBOX: 'maybe' }, 'GAFFER_SANDBOX'],
    [{ GAFFER_TIMEOUT_S: '5' }, 'GAFFER_TIMEOUT_S'],
    [{ GAFFER_MODEL: 'm' }, 'GAFFER_MODEL_URL'],
    [{ GAFFER_MODEL_URL: 'ftp://x' }, 'GAFFER_MODEL_URL'],
  ])('refuses bad environment values naming the variable (%#)', (env, field) => {
    expect(refusal(() => loadConfig({ dataDir: tempDir(), env })).field).toBe(field);
  });

  it('never echoes a secret in an error: a short token, a key-like URL, broken JSON around a key', () => {
    const messages = [
      refusal(() => loadConfig({ dataDir: dataDirWith({ tokens: { [SECRET.slice(0, 10)]: 'alice' } }), env: {} }))
        .message,
      refusal(() =>
        loadConfig({ dataDir: tempDir(), env: { GAFFER_MODEL_URL: `not a url ${SECRET}`, GAFFER_MODEL_KEY: SECRET } }),
      ).message,
      refusal(() =>
        loadConfig({
          dataDir: dataDirWith(`{"models": {"default": {"url": "http://x/v1", "key": "${SECRET}" ,}}}`),
          env: {},
        }),
      ).message,
      refusal(() =>
        loadConfig({
          dataDir: dataDirWith(`models:\n  default:\n    key: ${SECRET}\n   url: [`, 'gaffer.config.yaml'),
          env: {},
        }),
      ).message,
    ];
    for (const message of messages) {
      expect(message).not.toContain(SECRET);
      expect(message).not.toContain(SECRET.slice(0, 10));
    }
    expect(messages[2]).toMatch(/not valid JSON \(at character \d+\)/);
  });
});

describe('config timeouts', () => {
  it('are the defaults of a request that gives none; a request that gives one wins', async () => {
    const { config } = loadConfig({ dataDir: dataDirWith({ timeouts: { worker_s: 45, verify_s: 120 } }), env: {} });
    const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data'), timeouts: config.timeouts });
    try {
      const ws = makeWorkspace({});
      const { job } = engine.submit({ workspace: ws, verify: 'none', tasks: [{ instruction: 'x', command: 'true' }] });
      const { job: own } = engine.submit({
        workspace: ws,
        verify: 'none',
        timeout_s: 60,
        verify_timeout_s: 30,
        tasks: [{ instruction: 'x', command: 'true' }],
      });
      await Promise.all([engine.settled(job.id), engine.settled(own.id)]);
      expect(engine.store.getJob(job.id)?.spec).toMatchObject({ timeout_s: 45, verify_timeout_s: 120 });
      expect(engine.store.getJob(own.id)?.spec).toMatchObject({ timeout_s: 60, verify_timeout_s: 30 });
    } finally {
      await engine.close();
    }
  });
});

describe('describeConfig', () => {
  it('shows every value with its source and never a secret', () => {
    const dir = dataDirWith({
      tokens: { [`${SECRET}-token`]: 'alice' },
      models: { remote: { url: `https://user:${SECRET}@llm.example.com/v1`, key: SECRET, model: 'm' } },
    });
    const shown = describeConfig(
      loadConfig({ dataDir: dir, env: { GAFFER_MODEL_URL: 'http://127.0.0.1:9/v1', GAFFER_MODEL_KEY: SECRET } }),
    );
    const text = JSON.stringify(shown);
    expect(text).not.toContain(SECRET);
    expect(shown.values['models.default.key']).toEqual({ value: 'set (from env GAFFER_MODEL_KEY)', source: 'env' });
    expect(shown.values['models.remote.key']).toEqual({ value: 'set (from file)', source: 'file' });
    expect(shown.values['models.remote.url']?.value).toBe('https://llm.example.com/v1 (credentials in the URL hidden)');
    expect(shown.values.tokens).toEqual({ value: '1 set (owners: alice)', source: 'file' });
    expect(shown.values['runners.claude.enabled']).toEqual({ value: false, source: 'default' });
    expect(shown.values.sandbox).toEqual({ value: 'auto', source: 'default' });
  });
});
