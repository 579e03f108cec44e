import { describe, expect, it } from 'vitest';
import { listRunnerEnvNames, PAID_API_KEYS } from '../../src/platform/process/billing-env.js';
import {
  REPO_LOCATING_GIT_VARS,
  WORKER_ENV_NAMES,
  buildWorkerEnv,
  isCredentialName,
  listStartSecretNames,
} from '../../src/platform/process/env.js';

describe('buildWorkerEnv: an allowlist', () => {
  const parent = {
    PATH: '/usr/bin:/bin',
    HOME: '/home/me',
    USER: 'me',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'xterm',
    TMPDIR: '/tmp/me',
    HTTPS_PROXY: 'http://proxy:3128',
    NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
    GOPATH: '/home/me/go',
    CARGO_HOME: '/home/me/.cargo',
    PYENV_ROOT: '/home/me/.pyenv',
    VIRTUAL_ENV: '/w/.venv',
    GIT_AUTHOR_NAME: 'Ada',
    GAFFER_TOKEN: 't',
    GAFFER_MODEL_KEY: 'k',
    GAFFER_WEBHOOK_SECRET: 's',
    GAFFER_DATA_DIR: '/data',
    GAFFER_MODEL_URL: 'http://localhost:11434',
    GIT_DIR: '/repo/.git',
    GIT_WORK_TREE: '/repo',
    GIT_SSH_COMMAND: 'ssh -i k',
    GIT_CONFIG_COUNT: '1',
    ANTHROPIC_API_KEY: 'sk-ant',
    OPENAI_API_KEY: 'sk-oai',
    AWS_SECRET_ACCESS_KEY: 'aws',
    GITHUB_TOKEN: 'gh',
    NODE_OPTIONS: '--inspect',
    npm_config__auth: 'npm',
    MY_PROJECT_SETTING: 'x',
    UNDEFINED_ONE: undefined,
  };

  it('keeps who and where the user is, the locale, proxies, CA bundles, toolchain homes and git identity — nothing else', () => {
    expect(buildWorkerEnv(parent)).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/home/me',
      USER: 'me',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
      TERM: 'xterm',
      TMPDIR: '/tmp/me',
      HTTPS_PROXY: 'http://proxy:3128',
      NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
      GOPATH: '/home/me/go',
      CARGO_HOME: '/home/me/.cargo',
      PYENV_ROOT: '/home/me/.pyenv',
      VIRTUAL_ENV: '/w/.venv',
      GIT_AUTHOR_NAME: 'Ada',
    });
  });

  it("adds a runner's own names, but never gaffer's secrets, the repo-locating git variables or removeKeys, and leaves the parent untouched", () => {
    const env = buildWorkerEnv(parent, {
      allow: ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'GAFFER_TOKEN', 'GIT_DIR', 'NOT_SET'],
      removeKeys: ['OPENAI_API_KEY'],
    });
    expect(env.ANTHROPIC_API_KEY).toBe('sk-ant');
    for (const name of ['OPENAI_API_KEY', 'GAFFER_TOKEN', 'GIT_DIR', 'NOT_SET']) expect(env).not.toHaveProperty(name);
    expect(parent.GAFFER_TOKEN).toBe('t');
  });

  it('lists no credential and no repo-locating git variable on the allowlist', () => {
    for (const name of WORKER_ENV_NAMES) {
      expect(isCredentialName(name), name).toBe(false);
      expect(REPO_LOCATING_GIT_VARS).not.toContain(name);
    }
    expect(REPO_LOCATING_GIT_VARS).toEqual(expect.arrayContaining(['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE']));
  });

  it('takes every paid-API key and common credential out of gaffer at start, and nothing a tool needs to run', () => {
    for (const name of [
      ...PAID_API_KEYS,
      'AWS_SECRET_ACCESS_KEY',
      'AWS_SESSION_TOKEN',
      'GITHUB_TOKEN',
      'GH_TOKEN',
      'NPM_TOKEN',
      'HF_TOKEN',
      'DOCKER_PASSWORD',
      'GAFFER_TOKENS',
    ]) {
      expect(isCredentialName(name) || name.startsWith('GAFFER_'), name).toBe(true);
    }
    const names = listStartSecretNames({
      ...parent,
      TOKENIZERS_PARALLELISM: 'false',
      SSH_AUTH_SOCK: '/run/agent',
      KEYBOARD: 'us',
    });
    expect(names.sort()).toEqual([
      'ANTHROPIC_API_KEY',
      'AWS_SECRET_ACCESS_KEY',
      'GAFFER_MODEL_KEY',
      'GAFFER_TOKEN',
      'GAFFER_WEBHOOK_SECRET',
      'GITHUB_TOKEN',
      'OPENAI_API_KEY',
    ]);
  });

  it('gives an api runner its keys and a subscription runner only where it keeps its state', () => {
    expect(listRunnerEnvNames('claude', 'api')).toEqual(
      expect.arrayContaining(['ANTHROPIC_API_KEY', 'CLAUDE_CONFIG_DIR']),
    );
    expect(listRunnerEnvNames('claude', 'subscription')).toEqual(['CLAUDE_CONFIG_DIR']);
    expect(listRunnerEnvNames('codex', 'subscription')).toEqual(['CODEX_HOME']);
    expect(listRunnerEnvNames('shell', 'free')).toEqual([]);
    expect(listRunnerEnvNames('builtin', 'api')).toEqual([]);
  });
});
