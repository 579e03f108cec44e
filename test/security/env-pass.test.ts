import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isAllowlistedEnv } from '../../src/platform/process/env.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { gaffer } from '../reliability/helpers.js';

/** The names in an `env` dump (one `NAME=value` a line; continuation lines of multi-line values skipped). */
function namesIn(dump: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of dump.split('\n')) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) out.set(m[1] as string, m[2] as string);
  }
  return out;
}

/** What the shell itself sets, and what gaffer sets for every worker or verification (spec 03's comparable settings). */
const SET_BY_SHELL_OR_GAFFER = new Set([
  'PWD',
  'OLDPWD',
  'SHLVL',
  '_',
  'GAFFER_INSTRUCTION_FILE',
  'CI',
  'PYTHONHASHSEED',
]);

describe('config env.pass', () => {
  it('passes the named variables (a credential among them, from memory) to the worker and the verification, and nothing else beyond the allowlist', async () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(
      join(data, 'gaffer.config.json'),
      JSON.stringify({ env: { pass: ['MY_PASSED', 'NPM_TOKEN', 'GAFFER_TOKEN', 'GIT_DIR'] } }),
    );
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const env = {
      ...process.env,
      GAFFER_URL: '',
      MY_PASSED: 'passed-1',
      MY_OTHER: 'other-2',
      NPM_TOKEN: 'npm-token-3',
      GAFFER_TOKEN: 'gaffer-token-4',
      GIT_DIR: '/elsewhere/.git',
      NODE_OPTIONS: '--max-old-space-size=4096',
      LC_ALL: 'C.UTF-8',
    };
    const r = await gaffer(
      data,
      [
        '--json',
        'dispatch',
        '--workspace',
        ws,
        '--task',
        'print env',
        '--command',
        'env > worker-env.txt',
        '--verify',
        'env > verify-env.txt; echo 1 passed',
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);

    for (const file of ['worker-env.txt', 'verify-env.txt']) {
      const seen = namesIn(readFileSync(join(ws, file), 'utf8'));
      expect(seen.get('MY_PASSED'), file).toBe('passed-1');
      // held out of gaffer's own environment at start, handed over from memory
      expect(seen.get('NPM_TOKEN'), file).toBe('npm-token-3');
      expect(seen.get('LC_ALL'), file).toBe('C.UTF-8');
      expect(seen.get('PATH'), file).toBe(process.env.PATH);
      // env.pass never passes gaffer's own secrets or a repository-locating git variable
      for (const name of ['MY_OTHER', 'GAFFER_TOKEN', 'GIT_DIR', 'NODE_OPTIONS'])
        expect(seen.has(name), `${file}: ${name}`).toBe(false);
      const extra = [...seen.keys()].filter(
        (name) =>
          !isAllowlistedEnv(name) && !SET_BY_SHELL_OR_GAFFER.has(name) && name !== 'MY_PASSED' && name !== 'NPM_TOKEN',
      );
      expect(extra, file).toEqual([]);
    }
  });
});
