import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// `gaffer queue ls` says where a record would run as admission would route it: learned routing
// included (it named the roster's first entry when learning sends the type elsewhere: issue 34).

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

function gaffer(dataDir: string, args: string[]) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, GAFFER_URL: '', GAFFER_SANDBOX: 'off' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const grounded = { source: 'issue tracker', receipts: ['README.md:1 says todo'], done_means: ['the file exists'] };

describe('gaffer queue ls', () => {
  it("predicts the route admission gives: the learner's start above a rung that demonstrably fails, with who pays; a record it would refuse says why", () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    const rung = (id: string, cost: string, billing: string) => ({
      id,
      runner: 'shell',
      provider: `p-${id}`,
      billing,
      cost,
      tasks: ['fix'],
    });
    writeFileSync(
      join(data, 'gaffer.config.json'),
      JSON.stringify({
        roster: { entries: [rung('cheap', 'free', 'free'), rung('dear', 'mid', 'subscription')] },
        routing: { learn: true, min_acceptance: 0.8 },
      }),
    );
    // 30 failed outcomes of cheap for fix: learning starts fix on dear
    const store = new Store(data);
    for (let i = 0; i < 30; i++) {
      store.recordOutcome(
        {
          ts: new Date().toISOString(),
          job: `old-${i}`,
          task: 't',
          rung: 1,
          type: 'fix',
          runner: 'shell',
          model: null,
          provider: 'p-cheap',
          entry: 'cheap',
          status: 'failed',
          gates_passed: false,
          escalated_to: null,
          returned: false,
          attempts: 1,
          cost_usd: 0,
        },
        null,
      );
    }
    store.close();
    const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
    const dir = join(tempDir(), 'dispatch');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'a.json'),
      JSON.stringify({
        id: 'a',
        title: 'write a',
        type: 'fix',
        instruction: 'echo a > a.txt',
        files: ['a.txt'],
        ...grounded,
      }),
    );
    writeFileSync(
      join(dir, 'b.json'),
      JSON.stringify({
        id: 'b',
        title: 'design b',
        type: 'design',
        instruction: 'echo b > b.txt',
        files: ['b.txt'],
        ...grounded,
      }),
    );
    const listed = gaffer(data, ['queue', 'ls', dir, '--workspace', ws]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      /a\.json {2}a {2}ready {2}route: roster entry dear \(shell\), billed subscription — learned: skipped cheap \(0\/30 accepted/,
    );
    expect(listed.stdout).toMatch(
      /b\.json {2}b {2}ready {2}route: refused at dispatch: tasks\[0\]: nothing in .* takes "design"/,
    );
  });
});
