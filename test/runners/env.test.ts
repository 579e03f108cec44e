import { describe, expect, it } from 'vitest';
import { REPO_LOCATING_GIT_VARS, buildWorkerEnv } from '../../src/runners/process/env.js';

describe('buildWorkerEnv', () => {
  const parent = {
    PATH: '/usr/bin:/bin',
    HOME: '/home/me',
    GAFFER_TOKEN: 't',
    GAFFER_MODEL_KEY: 'k',
    GAFFER_WEBHOOK_SECRET: 's',
    GAFFER_GITHUB_TOKEN_FILE: 'f',
    GAFFER_DATA_DIR: '/data',
    GAFFER_MODEL_URL: 'http://localhost:11434',
    GIT_DIR: '/repo/.git',
    GIT_WORK_TREE: '/repo',
    GIT_INDEX_FILE: '/repo/.git/index',
    GIT_OBJECT_DIRECTORY: '/o',
    GIT_COMMON_DIR: '/c',
    GIT_NAMESPACE: 'ns',
    GIT_CEILING_DIRECTORIES: '/x',
    GIT_AUTHOR_NAME: 'Ada',
    GIT_SSH_COMMAND: 'ssh -i k',
    GIT_CONFIG_COUNT: '1',
    ANTHROPIC_API_KEY: 'sk-ant',
    UNDEFINED_ONE: undefined,
  };

  it("drops gaffer's own secrets and the repo-locating git variables, keeps the rest", () => {
    const env = buildWorkerEnv(parent);
    expect(env).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/home/me',
      GAFFER_DATA_DIR: '/data',
      GAFFER_MODEL_URL: 'http://localhost:11434',
      GIT_AUTHOR_NAME: 'Ada',
      GIT_SSH_COMMAND: 'ssh -i k',
      GIT_CONFIG_COUNT: '1',
      ANTHROPIC_API_KEY: 'sk-ant',
    });
  });

  it('drops removeKeys too and leaves the parent untouched', () => {
    const env = buildWorkerEnv(parent, { removeKeys: ['ANTHROPIC_API_KEY'] });
    expect(env.ANTHROPIC_API_KEY).toBeUndefined();
    expect(parent.ANTHROPIC_API_KEY).toBe('sk-ant');
    expect(parent.GAFFER_TOKEN).toBe('t');
  });

  it('lists GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE among the removed git variables', () => {
    expect(REPO_LOCATING_GIT_VARS).toEqual(expect.arrayContaining(['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE']));
  });
});
