import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wrapWithSandbox } from '../../src/platform/sandbox/bwrap.js';
import { buildSecretMaskArgs, registerMaskedPaths } from '../../src/platform/sandbox/masks.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { makeWorkspace } from '../helpers/temp.js';

const probe = probeSandbox();
const SKIP = probe.available ? '' : ` — SKIPPED: bubblewrap does not work here (${probe.reason})`;

// outside /tmp: the sandbox's private /tmp would hide them without any mask
let root: string;
let home: string;
let dataDir: string;
const savedHome = process.env.HOME;
beforeAll(() => {
  root = mkdtempSync('/var/tmp/gaffer-masks-');
  home = join(root, 'home');
  dataDir = join(root, 'data');
  for (const [path, content] of Object.entries({
    '.aws/credentials': '[default]\naws_secret_access_key = AWS-PLANTED\n',
    '.ssh/id_rsa': 'SSH-PLANTED\n',
    '.config/gcloud/credentials.db': 'GCLOUD-PLANTED\n',
    '.config/opencode/opencode.json': '{"own": "state"}\n',
    '.netrc': 'machine x password NETRC-PLANTED\n',
    '.npmrc': '//registry.npmjs.org/:_authToken=NPM-PLANTED\n',
    '.claude/settings.json': '{"claude": "own"}\n',
  })) {
    mkdirSync(join(home, path, '..'), { recursive: true });
    writeFileSync(join(home, path), content);
  }
  mkdirSync(join(dataDir, 'jobs', 'j1', 'tmp'), { recursive: true });
  writeFileSync(join(dataDir, 'gaffer.config.json'), '{"tokens": {"DATA-PLANTED": "alice"}}');
  writeFileSync(join(dataDir, 'jobs', 'j1', 'w.instruction.txt'), 'the instruction');
  process.env.HOME = home;
  registerMaskedPaths([dataDir]);
});
afterAll(() => {
  process.env.HOME = savedHome;
  rmSync(root, { recursive: true, force: true });
});

/** Runs `script` in the sandbox as an agent CLI runs there (the user's HOME as it is). */
function runInside(
  script: string,
  extra: { workspace?: string; writable?: string[]; readable?: string[]; tmpDir?: string; home?: null } = {},
) {
  const wrapped = wrapWithSandbox({
    shellCommand: script,
    workspace: extra.workspace ?? makeWorkspace({ 'a.txt': 'a\n' }),
    home: null,
    ...extra,
  });
  if (wrapped === null) throw new Error('bwrap does not work here');
  const [file, ...args] = wrapped.argv;
  return spawnSync(file as string, args, {
    encoding: 'utf8',
    timeout: 20_000,
    env: { PATH: process.env.PATH, HOME: home },
  });
}

describe(`the sandbox hides the known secret locations${SKIP}`, () => {
  it.skipIf(!probe.available)(
    'an agent-CLI run in the user HOME reads none of ~/.aws, ~/.ssh, ~/.config/gcloud, ~/.netrc, ~/.npmrc, /etc/shadow or the data dir, and still sees its own state under ~/.config and ~/.claude',
    () => {
      const cat = ['.aws/credentials', '.ssh/id_rsa', '.config/gcloud/credentials.db', '.netrc', '.npmrc']
        .map((p) => `"$HOME/${p}"`)
        .join(' ');
      const run = runInside(
        `cat ${cat} /etc/shadow "${dataDir}/gaffer.config.json" 2>&1; ls -A "${dataDir}" "$HOME/.ssh"; cat "$HOME/.config/opencode/opencode.json" "$HOME/.claude/settings.json"`,
      );
      expect(run.stdout).not.toMatch(/PLANTED/);
      // the CLI's own state is still there: ~/.config is not hidden as a whole
      expect(run.stdout).toContain('{"own": "state"}');
      expect(run.stdout).toContain('{"claude": "own"}');
      // a masked file reads empty (npm or git go on with no settings); a masked folder is empty
      expect(run.stdout).not.toMatch(/\.(netrc|npmrc): Permission denied/);
      expect(runInside('wc -c < "$HOME/.npmrc"; ls -A "$HOME/.aws" | wc -l').stdout).toBe('0\n0\n');
      // and the planted files are really readable outside, so the check above can fail
      expect(readFileSync(join(home, '.aws/credentials'), 'utf8')).toContain('AWS-PLANTED');
      if (existsSync('/etc/shadow') && process.getuid?.() === 0) {
        expect(readFileSync('/etc/shadow', 'utf8').length).toBeGreaterThan(0);
        expect(runInside('wc -c < /etc/shadow').stdout.trim()).toBe('0');
      }
    },
  );

  it.skipIf(!probe.available)(
    'what the run needs from inside the data dir stays: its TMPDIR writable, its instruction file readable, the rest of the data dir hidden',
    () => {
      const tmp = join(dataDir, 'jobs', 'j1', 'tmp', 'w-claude');
      const instruction = join(dataDir, 'jobs', 'j1', 'w.instruction.txt');
      const run = runInside(
        `echo t > "$TMPDIR/x" && cat "$TMPDIR/x" "${instruction}"; cat "${dataDir}/gaffer.config.json"`,
        { tmpDir: tmp, readable: [instruction] },
      );
      expect(run.stdout).toContain('t\nthe instruction');
      expect(run.stdout).not.toContain('DATA-PLANTED');
      expect(readFileSync(join(tmp, 'x'), 'utf8')).toBe('t\n');
    },
  );

  it.skipIf(!probe.available)(
    'a workspace inside the data dir stays writable, and a data dir inside the workspace is hidden',
    () => {
      const inside = join(dataDir, 'worktrees', 'ws');
      mkdirSync(inside, { recursive: true });
      expect(runInside('echo w > written && cat written', { workspace: inside }).stdout).toBe('w\n');
      expect(readFileSync(join(inside, 'written'), 'utf8')).toBe('w\n');

      const ws = makeWorkspace({ 'a.txt': 'a\n', '.gaffer-data/secret': 'NESTED-PLANTED' });
      registerMaskedPaths([join(ws, '.gaffer-data')]);
      const run = runInside('cat .gaffer-data/secret a.txt', { workspace: ws });
      expect(run.stdout).toBe('a\n');
    },
  );
});

describe('buildSecretMaskArgs', () => {
  it('masks only what exists, directories with a tmpfs and files with an empty file, under a tmpfs HOME too', () => {
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const args = buildSecretMaskArgs(null, { workspace: ws }, home);
    expect(args).toEqual(
      expect.arrayContaining(['--tmpfs', join(home, '.aws'), '--tmpfs', join(home, '.ssh'), join(home, '.netrc')]),
    );
    const netrc = args.indexOf(join(home, '.netrc'));
    expect(args[netrc - 2]).toBe('--ro-bind');
    expect(readFileSync(args[netrc - 1] as string, 'utf8')).toBe('');
    // not there: not masked (bwrap would create it)
    expect(args).not.toContain(join(home, '.docker'));
    expect(args).not.toContain(join(home, '.config'));
    // under a tmpfs HOME too (issue 32): a bind that lands on a credential store must not bring it back
    const underTmpfs = buildSecretMaskArgs({ how: 'tmpfs', home }, { workspace: ws }, home);
    expect(underTmpfs).toEqual(
      expect.arrayContaining(['--tmpfs', join(home, '.aws'), '--tmpfs', join(home, '.ssh'), join(home, '.netrc')]),
    );
    expect(underTmpfs).not.toContain(join(home, '.docker'));
    expect(underTmpfs).toContain(dataDir);
  });
});
