import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { configFileSchema } from '../../src/config/config-schema.js';
import { editDistance, knownKeysAt, nearestKey } from '../../src/domain/nearest-key.js';
import { jobRequestSchema, parseJobRequest } from '../../src/domain/request.js';
import { tempDir } from '../helpers/temp.js';

function refusalOf(run: () => unknown): { message: string; field?: string } {
  try {
    run();
  } catch (err) {
    return err as { message: string; field?: string };
  }
  throw new Error('expected a refusal');
}

const parse = (body: unknown) => parseJobRequest(body, { defaultRunner: null, available: ['shell'] });
const ok = { workspace: '/tmp/ws', tasks: [{ instruction: 'do it', command: 'true' }] };

describe('the nearest known key', () => {
  it('is the one a typo is fewest edits away from, and none when every key is far', () => {
    expect(editDistance('verfy', 'verify')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(nearestKey('verfy', ['verify', 'verify_scope', 'workspace'])).toBe('verify');
    expect(nearestKey('Workspace', ['workspace', 'tasks'])).toBe('workspace');
    expect(nearestKey('fix_round', ['fix_rounds', 'max_rounds'])).toBe('fix_rounds');
    expect(nearestKey('endpoint', ['workspace', 'tasks', 'verify'])).toBeNull();
    expect(nearestKey('env', ['verify', 'repo'])).toBeNull();
  });

  it('reads the keys a schema accepts at an issue path, through arrays, optionals and preprocessing', () => {
    expect(knownKeysAt(jobRequestSchema, [])).toEqual(
      expect.arrayContaining(['workspace', 'tasks', 'verify', 'verify_scope']),
    );
    expect(knownKeysAt(jobRequestSchema, ['tasks', 0])).toEqual(
      expect.arrayContaining(['instruction', 'command', 'files', 'outputs']),
    );
    expect(knownKeysAt(configFileSchema, ['workers'])).toEqual(['max_parallel']);
    expect(knownKeysAt(jobRequestSchema, ['workspace'])).toEqual([]);
  });
});

describe('an unknown key in a request or a config file', () => {
  it('names the nearest known key when it looks like a typo', () => {
    expect(refusalOf(() => parse({ ...ok, verfy: 'npm test' }))).toMatchObject({
      field: 'verfy',
      message: 'unknown key "verfy" — did you mean "verify"? remove or rename it',
    });
    expect(refusalOf(() => parse({ ...ok, tasks: [{ instruction: 'x', comand: 'true' }] }))).toMatchObject({
      field: 'tasks[0].comand',
      message: 'tasks[0]: unknown key "comand" — did you mean "command"? remove or rename it',
    });
    expect(refusalOf(() => parse({ ...ok, verfy: 'a', endpoint: 'x' })).message).toBe(
      'unknown keys "verfy", "endpoint" — did you mean "verify" for "verfy"? remove or rename them',
    );
  });

  it('says only "remove it" when no known key is near', () => {
    expect(refusalOf(() => parse({ ...ok, endpoint: 'http://x' })).message).toBe('unknown key "endpoint" — remove it');
  });

  it('in the config file, names the nearest known key too', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'gaffer.config.json'), JSON.stringify({ workers: { max_paralel: 2 } }));
    expect(refusalOf(() => loadConfig({ dataDir: dir, env: {} })).message).toContain(
      'workers: unknown key(s) max_paralel — did you mean "max_parallel"?',
    );
  });
});
