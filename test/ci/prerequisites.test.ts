import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// A CI image without Chromium (or bwrap, Redis, the agent CLIs) must fail the run, not pass with
// the board's suite skipped: test/global-setup.ts stops a CI=true run that lacks any of them.
describe('CI=true and a missing prerequisite', () => {
  it('a run that lacks Chromium stops before any test, naming it and how to install it', () => {
    const run = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', 'test/runners/cli/vet.test.ts'], {
      env: { ...process.env, CI: 'true', GAFFER_CHROMIUM: '/nonexistent/chromium' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    const out = run.stdout + run.stderr;
    expect(run.status, out).not.toBe(0);
    expect(out).toContain('Chromium at /nonexistent/chromium (apt-get install chromium');
    expect(out).not.toMatch(/Tests\s+\d+ passed/);
  }, 150_000);
});
