import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDoctor, type DoctorCheck } from '../../src/engine/maintenance/doctor.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { trialSandbox } from '../../src/platform/sandbox/trial.js';
import { tempDir } from '../helpers/temp.js';

const probe = probeSandbox();
const SKIP = probe.available ? '' : ` — SKIPPED: bubblewrap does not work here (${probe.reason})`;

// a HOME outside /tmp (the private /tmp would hide one there anyway)
const home = mkdtempSync('/var/tmp/gaffer-doctor-home-');
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** A fake `claude` installed the npm way under /tmp: bin/claude → ../lib/node_modules/…/cli.js, which reads `needs` at start. */
function fakeClaudeUnderTmp(needs: string | null): string {
  const prefix = tempDir('gaffer-doctor-prefix-');
  const pkg = join(prefix, 'lib', 'node_modules', '@anthropic-ai', 'claude-code');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(
    join(pkg, 'cli.js'),
    `#!/bin/sh\n${needs === null ? '' : `cat ${JSON.stringify(needs)} >/dev/null || exit 1\n`}echo "2.1.197 (Claude Code)"\n`,
  );
  chmodSync(join(pkg, 'cli.js'), 0o755);
  mkdirSync(join(prefix, 'bin'));
  symlinkSync('../lib/node_modules/@anthropic-ai/claude-code/cli.js', join(prefix, 'bin', 'claude'));
  return join(prefix, 'bin');
}

async function doctorChecks(env: NodeJS.ProcessEnv): Promise<Record<string, DoctorCheck>> {
  const report = await runDoctor({ dataDir: join(tempDir('gaffer-doctor-data-'), 'data'), env });
  return Object.fromEntries(report.checks.map((c) => [c.name, c]));
}

describe.skipIf(!probe.available)(`gaffer doctor's sandbox trial${SKIP}`, () => {
  it('writes to the workspace and below HOME, and nothing is left in HOME', async () => {
    const checks = await doctorChecks({ ...process.env, HOME: home });
    expect(checks.sandbox).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(
        new RegExp(
          `a trial worker wrote its workspace and below HOME \\(${home}: (an overlay|a private tmpfs \\(this bwrap has no --tmp-overlay\\)), nothing left after\\)`,
        ),
      ),
    });
    expect(readdirSync(home)).toEqual([]);
  });

  it('fails when a worker could not write below HOME', () => {
    // a HOME that is not a directory gets no private HOME: the write is refused, and the trial says so
    const file = join(home, 'not-a-dir');
    writeFileSync(file, '');
    try {
      expect(trialSandbox({ ...process.env, HOME: file })).toEqual({
        ok: false,
        detail: 'a trial worker failed: cannot write HOME',
      });
    } finally {
      rmSync(file);
    }
  });

  it('an enabled agent CLI installed under /tmp is run inside the sandbox: ok when it starts there, a failure when it cannot', async () => {
    const env = { ...process.env, HOME: home, GAFFER_ENABLED_RUNNERS: 'claude' };
    const ok = await doctorChecks({ ...env, PATH: `${fakeClaudeUnderTmp(null)}:${process.env.PATH ?? ''}` });
    expect(ok['runner claude']).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining('runs inside the sandbox'),
    });

    // one that needs a file the sandbox hides (another folder under /tmp): installed is not enough
    const hidden = join(tempDir('gaffer-doctor-hidden-'), 'needed');
    writeFileSync(hidden, 'x');
    const bad = await doctorChecks({ ...env, PATH: `${fakeClaudeUnderTmp(hidden)}:${process.env.PATH ?? ''}` });
    expect(bad['runner claude']).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('does not run inside the sandbox'),
      fix: expect.stringContaining('outside /tmp'),
    });
  });
});
