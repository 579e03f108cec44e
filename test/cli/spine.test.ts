import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// The routing spine where a person looks, through bin/gaffer: `doctor` prints the roster and where it
// came from, the ladders, learning, approval, the budgets with their spend and reset, and the breaker;
// `status --full` prints each attempt's route and why, the climbs with their autopsy, the reroutes and
// the spend with the budget it counted against.

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

function gaffer(dataDir: string, args: string[]) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, GAFFER_URL: '', GAFFER_SANDBOX: 'off', GAFFER_CONFIG: '' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const entry = (id: string, cost: string, more: Record<string, unknown> = {}) => ({
  id,
  runner: 'shell',
  provider: 'local',
  billing: 'free',
  cost,
  tasks: ['fix'],
  ...more,
});

/**
 * Three rungs for `fix` (cheap → mid → dear, dear on another provider and mid's fallback), one api
 * entry for `design`; learning on; a budget on mid of 0.1 s a day, which one attempt spends.
 */
const CONFIG = {
  roster: {
    entries: [
      entry('cheap', 'free'),
      entry('mid', 'low', { fallback: 'dear' }),
      entry('dear', 'high', { provider: 'backup', billing: 'subscription' }),
      entry('paid', 'mid', { provider: 'cloud', billing: 'api', tasks: ['design'] }),
    ],
  },
  routing: { learn: true, min_acceptance: 0.7 },
  approval: { timeout_s: 3600 },
  budgets: [{ provider: 'local', entry: 'mid', window: 'day', unit: 'seconds', limit: 0.1 }],
  breaker: { trip_after: 2, cooldown_s: 600 },
};

/** Writes 41 over anything but 41, and 42 over 41: a task's first rung fails its gate, the next passes. */
const FLIP =
  'if grep -qx 41 answer.txt 2>/dev/null; then echo 42 > answer.txt; else echo 41 > answer.txt; fi; sleep 0.3';
const TASK = { name: 'ans', type: 'fix', instruction: FLIP, files: ['answer.txt'], gates: ['grep -qx 42 answer.txt'] };

function setUp(): { data: string; ws: string; request: string } {
  const data = join(tempDir(), 'data');
  mkdirSync(data, { recursive: true });
  writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify(CONFIG));
  const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
  const request = join(tempDir(), 'request.json');
  writeFileSync(request, JSON.stringify({ workspace: ws, verify: 'exit 0', fix_rounds: 0, tasks: [TASK] }));
  return { data, ws, request };
}

function dispatch(data: string, request: string): string {
  const r = gaffer(data, ['--json', 'dispatch', request]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { id: string }).id;
}

describe('the routing spine where a person looks', () => {
  it('doctor prints the roster and its source, the ladders, learning, approval, each budget spent/limit/reset, and the breaker', () => {
    const { data, request } = setUp();
    dispatch(data, request);
    const config = join(data, 'gaffer.config.json');

    const r = gaffer(data, ['doctor']);
    expect(r.stderr).toBe('');
    const out = r.stdout;
    expect(out).toContain(`roster: 4 entries from config ${config}`);
    expect(out).toContain("a workspace's gaffer.roster.json is not read while this one is set");
    expect(out).toMatch(
      / {4}entry +runner +model +billing +cost +provider +takes\n {4}cheap +shell +default model +free +free +local +fix\n/,
    );
    expect(out).toMatch(/ {4}mid +shell +default model +free +low +local +fix +fallback: dear\n/);
    expect(out).toMatch(/ {4}dear +shell +default model +subscription +high +backup +fix\n/);
    expect(out).toMatch(/ {4}paid +shell +default model +api +mid +cloud +design\n/);
    expect(out).toContain(
      'ladders (cheapest first; a rung that fails climbs one up, a second failed rung returns the task):',
    );
    expect(out).toContain('    fix: cheap → mid → dear');
    expect(out).toContain('    design: paid');
    expect(out).toContain('learning: on, min acceptance 0.7');
    // one job: cheap failed its gate, mid passed — the figures the learner reads now, and where it would start
    expect(out).toMatch(
      / {4}fix: cheap 0\/1, mid 1\/1, dear 0\/0 — starts on cheap \(learned: cheap has 1 outcomes \(< 30\), too few to skip\)/,
    );
    expect(out).toContain('approval: default auto, an unanswered ask is no after 3600 s');
    expect(out).toContain('    asks first: paid (bills api)');
    expect(out).toContain('    runs without asking: cheap, mid, dear');
    expect(out).toContain('budgets:');
    expect(out).toMatch(
      / {4}roster entry mid \(local\) day budget \(0\.1 seconds\): 0\.[3-9]\d* of 0\.1 seconds spent — spent: held until \d{4}-\d\d-\d\dT00:00:00Z; resets \d{4}-\d\d-\d\dT00:00:00Z/,
    );
    expect(out).toContain(
      'breaker: closed — 0 unattended job(s) in a row failed outright (opens at 2); cool-down 600 s',
    );

    const json = JSON.parse(gaffer(data, ['--json', 'doctor']).stdout) as { spine: Record<string, unknown> };
    expect(json.spine).toMatchObject({
      roster: {
        source: `config ${config}`,
        entries: expect.arrayContaining([
          expect.objectContaining({
            entry: 'mid',
            runner: 'shell',
            model: null,
            billing: 'free',
            cost: 'low',
            provider: 'local',
            fallback: 'dear',
          }),
        ]),
      },
      ladders: expect.arrayContaining([
        { type: 'fix', rungs: ['cheap', 'mid', 'dear'], starts_on: 'cheap', why: expect.stringContaining('learned') },
      ]),
      learning: { on: true, min_acceptance: 0.7, min_samples: 30 },
      approval: { default: 'auto', timeout_s: 3600 },
      breaker: { trip_after: 2, cooldown_s: 600, open: false },
    });
    expect((json.spine.budgets as { limit: number; spent: number; state: string; resets: number }[])[0]).toMatchObject({
      limit: 0.1,
      state: 'spent',
      resets: expect.any(Number),
    });
  });

  it('doctor with no roster says where tasks run instead', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ default_runner: 'shell' }));
    const out = gaffer(data, ['doctor']).stdout;
    expect(out).toContain(
      `roster: none in the config or at ${join(data, 'gaffer.roster.json')} — a task runs on the runner it names, else the default runner shell; a workspace's committed gaffer.roster.json routes its own jobs`,
    );
    expect(out).toContain('learning: off (routing.learn)');
    expect(out).toContain('budgets: none configured');
    expect(out).toContain('breaker: closed');
  });

  it('doctor names a data dir gaffer.roster.json as the source; one it cannot read fails doctor, naming the file and the field', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    const file = join(data, 'gaffer.roster.json');
    writeFileSync(file, JSON.stringify({ entries: [entry('only', 'free', { tasks: ['sweep', 'fix'] })] }));
    const ok = gaffer(data, ['doctor']);
    expect(ok.stdout).toContain(
      `roster: 1 entry from ${file} — a workspace's gaffer.roster.json is not read while this one is set`,
    );
    expect(ok.stdout).toContain('    sweep: only\n    fix: only\n');
    expect(ok.stdout).toContain(
      "learning: off (routing.learn) — a task starts on the roster's first entry taking its type\n    sweep: only 0/0 — starts on only (the first entry of",
    );

    writeFileSync(file, JSON.stringify({ entries: [entry('only', 'cheap')] }));
    const broken = gaffer(data, ['--json', 'doctor']);
    expect(broken.code).toBe(1);
    const report = JSON.parse(broken.stdout) as { checks: { name: string; status: string; detail: string }[] };
    expect(report.checks.find((c) => c.name === 'roster')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(new RegExp(`^${file}: roster\\.entries\\[0\\]\\.cost: .*got "cheap"`)),
    });
  });

  it("status --full shows each attempt's route and why, the climb with its autopsy, the reroute and the spend against its budget; status does not", () => {
    const { data, ws, request } = setUp();
    const first = dispatch(data, request);
    rmSync(join(ws, 'answer.txt'));
    // mid's day budget is now spent: the second job's climb to mid moves to mid's fallback, dear
    const second = dispatch(data, request);

    const full = gaffer(data, ['status', first, '--full']);
    expect(full.code, full.stderr).toBe(0);
    const out = full.stdout;
    expect(out).toContain('  routes:');
    expect(out).toMatch(
      /\n {4}ans +shell +default model +entry cheap \(local\) +learned: cheap has 0 outcomes \(< 30\), too few to skip\n/,
    );
    expect(out).toMatch(
      /\n {4}ans\+mid +shell +default model +entry mid \(local\) +climbed from cheap: gates failed: grep -qx 42 answer\.txt \(exit 1\)\n/,
    );
    expect(out).toContain(
      [
        '  climbs:',
        '    ans: cheap → mid — gates failed: grep -qx 42 answer.txt (exit 1)',
        '      autopsy 1: cheap (default model on shell) ended done, verdict fail',
        '        gate grep -qx 42 answer.txt: fail — exit 1',
        '  reroutes: none',
      ].join('\n'),
    );
    expect(out).toMatch(/\n {4}ans +no budget +0\.\d s \(free\)\n/);
    expect(out).toMatch(/\n {4}ans\+mid +roster entry mid \(local\) day budget \(0\.1 seconds\) +0\.\d s \(free\)\n/);
    expect(out).toMatch(/\n {4}total: 0\.\d s free\n$/);

    const plain = gaffer(data, ['status', first]).stdout;
    for (const section of ['routes:', 'climbs:', 'autopsy', 'reroutes', 'counts in'])
      expect(plain).not.toContain(section);

    const rerouted = gaffer(data, ['status', second, '--full']).stdout;
    expect(rerouted).toMatch(
      /\n {4}ans\+mid +shell +default model +entry dear \(backup\) +climbed from cheap: gates failed: grep -qx 42 answer\.txt \(exit 1\); then rerouted to its fallback \(see reroutes\)\n/,
    );
    expect(rerouted).toMatch(
      /\n {2}reroutes:\n {4}ans\+mid: roster entry mid \(local\) day budget \(0\.1 seconds\) is spent: 0\.\d+ of 0\.1 seconds since .* — moved to fallback entry dear \(backup\)\n/,
    );
    // on its fallback the attempt is billed as dear (subscription, another provider): mid's budget does not count it
    expect(rerouted).toMatch(
      /\n {4}ans\+mid +no budget +cost unknown \(subscription\): the runner reported neither requests nor tokens\n/,
    );
  });
});
