import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

function gaffer(dataDir: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, GAFFER_URL: '', ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('gaffer lint from flags', () => {
  it('takes --command and --runner as dispatch does, so a request needs no config to be linted', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'src/date.js': '' });
    const good = [
      '--workspace',
      ws,
      '--task',
      'Fix parseDate() in src/date.js so that dates like 2024-02-30 are refused with a RangeError; test/date.test.js covers it',
      '--files',
      'src/date.js',
      '--verify',
      'npm test',
    ];
    const withCommand = gaffer(data, ['lint', ...good, '--command', './scripts/fix.sh']);
    expect(withCommand).toMatchObject({ code: 0, stdout: 'nothing to add\n' });
    const vague = gaffer(data, ['--json', 'lint', '--workspace', ws, '--task', 'fix it', '--runner', 'shell']);
    expect(vague.code).toBe(1);
    expect(JSON.parse(vague.stdout)).toMatchObject({ ok: false, codes: expect.arrayContaining(['too_short']) });
    // without either, and nothing configured: still refused, naming what to give
    const none = gaffer(data, ['lint', ...good]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no_runner');
  });
});

describe('gaffer nodes', () => {
  it('with no coordinator on the data dir, refuses saying what it needs', () => {
    const data = join(tempDir(), 'data');
    const r = gaffer(data, ['nodes']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('only a coordinator (gaffer serve --queue redis://HOST:6379) has nodes');
  });
});

describe('gaffer runners', () => {
  it('shell has no version of its own, and its sandbox is what bubblewrap can do here', () => {
    const data = join(tempDir(), 'data');
    const { runners } = JSON.parse(gaffer(data, ['--json', 'runners']).stdout) as {
      runners: { key: string; version: string | null; sandbox: boolean }[];
    };
    const sandboxed = probeSandbox().available;
    expect(runners.find((r) => r.key === 'shell')).toMatchObject({ version: null, sandbox: sandboxed });
    expect(runners.find((r) => r.key === 'builtin')).toMatchObject({ sandbox: sandboxed });
    const human =
      gaffer(data, ['runners'])
        .stdout.split('\n')
        .find((l) => l.startsWith('shell')) ?? '';
    expect(human).toMatch(new RegExp(`^shell +installed +- +no +${sandboxed ? 'yes' : 'no'} `));
    expect(human).not.toContain(process.version);
  });

  it('names its columns, and shows an installed agent CLI the config leaves off as disabled, naming the setting that does', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data);
    // a claude that answers --version: installed, whatever the machine has
    const bin = tempDir('gaffer-bin-');
    writeFileSync(join(bin, 'claude'), '#!/bin/sh\necho "2.1.197 (Claude Code)"\n', { mode: 0o755 });
    const withClaude = (env: NodeJS.ProcessEnv) => ({
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      GAFFER_ENABLED_RUNNERS: '',
      ...env,
    });
    const claudeRow = (env: NodeJS.ProcessEnv) =>
      (
        JSON.parse(gaffer(data, ['--json', 'runners'], withClaude(env)).stdout) as { runners: { key: string }[] }
      ).runners.find((r) => r.key === 'claude');
    const lines = (env: NodeJS.ProcessEnv) => gaffer(data, ['runners'], withClaude(env)).stdout.split('\n');
    const claudeLine = (env: NodeJS.ProcessEnv) => lines(env).find((l) => l.startsWith('claude ')) ?? '';

    const off = lines({});
    expect(off[0]).toMatch(/^RUNNER +STATE +VERSION +RESUME +SANDBOX +DESCRIPTION$/);
    const offLine = off.find((l) => l.startsWith('claude ')) ?? '';
    expect(offLine).toMatch(/^claude +disabled +2\.1\.197 /);
    expect(offLine).toContain('runners.claude.enabled');
    expect(offLine).not.toContain('installed');
    expect(claudeRow({})).toMatchObject({
      installed: true,
      enabled: false,
      version: '2.1.197',
      disabled_by: expect.stringContaining('runners.claude.enabled'),
    });

    expect(claudeRow({ GAFFER_ENABLED_RUNNERS: 'claude' })).toMatchObject({
      installed: true,
      enabled: true,
      disabled_by: null,
    });
    expect(claudeLine({ GAFFER_ENABLED_RUNNERS: 'claude' })).toMatch(/^claude +installed +2\.1\.197 /);

    // the environment overrides the file: the one that keeps it off is named
    expect(claudeLine({ GAFFER_ENABLED_RUNNERS: 'codex' })).toContain('GAFFER_ENABLED_RUNNERS');
    const config = join(data, 'gaffer.config.json');
    writeFileSync(config, JSON.stringify({ runners: { claude: { enabled: false } } }));
    expect(claudeRow({})).toMatchObject({ enabled: false, disabled_by: `runners.claude.enabled: false in ${config}` });
  });
});

describe('gaffer list --status', () => {
  it('says no job matches the filter, naming it, when jobs exist; "no jobs yet" only when there are none', () => {
    const data = join(tempDir(), 'data');
    expect(gaffer(data, ['list'])).toMatchObject({ code: 0, stdout: 'no jobs yet\n' });
    expect(gaffer(data, ['list', '--status', 'running'])).toMatchObject({ code: 0, stdout: 'no jobs yet\n' });
    const ws = makeWorkspace({ 'a.txt': 'a' });
    expect(
      gaffer(data, [
        'dispatch',
        '--workspace',
        ws,
        '--verify',
        'none',
        '--task',
        'append',
        '--command',
        'echo b >> a.txt',
      ]).code,
    ).toBe(0);
    const filtered = gaffer(data, ['list', '--status', 'running']);
    expect(filtered.code).toBe(0);
    expect(filtered.stdout).not.toContain('no jobs yet');
    expect(filtered.stdout).toContain('no job matches --status running');
    expect(gaffer(data, ['list', '--status', 'done']).stdout).toMatch(/^[0-9a-f]{12} +done /);
    expect(JSON.parse(gaffer(data, ['--json', 'list', '--status', 'running']).stdout)).toEqual({ jobs: [] });
  });
});

describe('gaffer wait --help', () => {
  it('lists every condition the wait accepts', () => {
    const data = join(tempDir(), 'data');
    // the refusal of an unknown condition lists every form the parser has
    const refusal = gaffer(data, ['wait', 'ffffffffffff', '--for', 'bogus']);
    expect(refusal.code).toBe(2);
    const forms = (/use one of: ([^[]+) \[/.exec(refusal.stderr)?.[1] ?? '').split(', ');
    expect(forms).toContain('changed');
    const help = gaffer(data, ['wait', '--help']).stdout;
    for (const form of forms) expect(help).toContain(`  ${form} `);
  });
});
