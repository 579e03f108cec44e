import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');
const ENV_WITHOUT_MODEL = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GAFFER_')));

function dispatch(data: string, body: unknown) {
  const r = spawnSync(BIN, ['--data-dir', data, '--json', 'dispatch', '-'], {
    encoding: 'utf8',
    input: JSON.stringify(body),
    env: ENV_WITHOUT_MODEL,
    timeout: 60_000,
  });
  return {
    code: r.status,
    error: r.stderr
      ? (
          JSON.parse(r.stderr.trim().split('\n').at(-1) ?? '{}') as {
            error?: { code: string; message: string; field?: string };
          }
        ).error
      : undefined,
  };
}

describe('runner vetting before anything starts (spec 04)', () => {
  it('refuses a disabled agent CLI, a builtin task without an endpoint, and an unknown runner; nothing is created', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const disabled = dispatch(data, { workspace: ws, tasks: [{ instruction: 'edit a.txt', runner: 'claude' }] });
    expect(disabled.code).toBe(2);
    expect(disabled.error).toMatchObject({ code: 'runner_disabled', field: 'tasks[0].runner' });
    expect(disabled.error?.message).toContain('runners.claude.enabled');
    const builtin = dispatch(data, { workspace: ws, tasks: [{ instruction: 'edit a.txt', runner: 'builtin' }] });
    expect(builtin.error).toMatchObject({ code: 'model_endpoint_missing', field: 'tasks[0].runner' });
    const unknown = dispatch(data, { workspace: ws, tasks: [{ instruction: 'edit a.txt', runner: 'aider' }] });
    expect(unknown.error).toMatchObject({ code: 'unknown_runner' });
    const none = dispatch(data, { workspace: ws, tasks: ['edit a.txt'] });
    expect(none.error).toMatchObject({ code: 'no_runner' });
    const list = spawnSync(BIN, ['--data-dir', data, '--json', 'list'], { encoding: 'utf8', env: ENV_WITHOUT_MODEL });
    expect(JSON.parse(list.stdout).jobs).toEqual([]);
  });

  it('shell and builtin turned off in the config refuse their tasks (a command without a runner too), and runners says what keeps them off', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(
      join(data, 'gaffer.config.json'),
      JSON.stringify({
        runners: { shell: { enabled: false }, builtin: { enabled: false } },
        models: { default: { url: 'http://127.0.0.1:9/v1', model: 'm' } },
      }),
    );
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const command = dispatch(data, { workspace: ws, tasks: [{ instruction: 'touch b', command: 'touch b' }] });
    expect(command.code).toBe(2);
    expect(command.error).toMatchObject({ code: 'runner_disabled', field: 'tasks[0].runner' });
    expect(command.error?.message).toContain('shell is disabled by runners.shell.enabled');
    const builtin = dispatch(data, { workspace: ws, tasks: [{ instruction: 'edit a.txt', runner: 'builtin' }] });
    expect(builtin.error).toMatchObject({ code: 'runner_disabled', field: 'tasks[0].runner' });
    expect(builtin.error?.message).toContain('set runners.builtin.enabled: true');
    const list = spawnSync(BIN, ['--data-dir', data, '--json', 'list'], { encoding: 'utf8', env: ENV_WITHOUT_MODEL });
    expect(JSON.parse(list.stdout).jobs).toEqual([]);
    const runners = spawnSync(BIN, ['--data-dir', data, '--json', 'runners'], {
      encoding: 'utf8',
      env: ENV_WITHOUT_MODEL,
    });
    const rows = (JSON.parse(runners.stdout) as { runners: { key: string; enabled: boolean; disabled_by: string }[] })
      .runners;
    expect(rows.filter((r) => r.key === 'shell' || r.key === 'builtin')).toEqual([
      expect.objectContaining({
        key: 'shell',
        enabled: false,
        disabled_by: expect.stringContaining('runners.shell.enabled'),
      }),
      expect.objectContaining({
        key: 'builtin',
        enabled: false,
        disabled_by: expect.stringContaining('runners.builtin.enabled'),
      }),
    ]);
  });
});
