import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliRunner } from '../../../src/runners/cli/cli-runner.js';
import { createSandbox } from '../../../src/platform/sandbox/sandbox.js';
import { CLI_PROFILES, type CliProfile } from '../../../src/runners/cli/profiles.js';
import { mergeTables, writeMergedSettings } from '../../../src/runners/cli/settings-file.js';
import { tempDir } from '../../helpers/temp.js';

/** What a user's own home already holds for each CLI: settings gaffer must keep. */
const USER_SETTINGS: Record<string, { file: string; content: string }> = {
  claude: { file: '.claude/settings.json', content: '{"theme":"dark","permissions":{"allow":["Bash(ls)"]}}\n' },
  codex: { file: '.codex/config.toml', content: 'model = "o3"\n[mcp_servers.docs]\ncommand = "docs-server"\n' },
  gemini: {
    file: '.gemini/settings.json',
    content:
      '{"security":{"auth":{"selectedType":"oauth-personal"}},"ui":{"theme":"GitHub"},"general":{"vimMode":true}}\n',
  },
  qwen: { file: '.qwen/settings.json', content: '{"security":{"auth":{"selectedType":"qwen-oauth"}}}\n' },
  opencode: { file: '.config/opencode/opencode.json', content: '{"theme":"tokyonight","autoshare":false}\n' },
};

/** A stand-in binary: answers the version command with the pinned version and prints one line otherwise. */
function fakeBinary(profile: CliProfile): string {
  const dir = tempDir('gaffer-fakecli-');
  const bin = join(dir, profile.binary);
  writeFileSync(bin, `#!/bin/sh\ncase "$1" in --version) echo "${profile.version}";; *) echo '{}';; esac\n`);
  chmodSync(bin, 0o755);
  return dir;
}

async function setUpRun(
  profile: CliProfile,
  home: string,
  endpoint: { url: string; key: string } | null,
): Promise<void> {
  const runner = new CliRunner(profile, {
    enabled: true,
    binDirs: [fakeBinary(profile)],
    home,
    endpoint,
    sandbox: createSandbox('off'),
  });
  const jobDir = tempDir('gaffer-job-');
  await runner.run({
    jobId: 'j1',
    workerName: 'worker-1',
    attempt: 1,
    role: 'worker',
    instruction: 'edit',
    workspace: tempDir('gaffer-ws-'),
    command: null,
    model: null,
    timeoutMs: 20_000,
    maxRounds: 1,
    resume: null,
    files: [],
    sandbox: false,
    signal: new AbortController().signal,
    env: process.env,
    logFile: join(jobDir, 'w.log'),
    instructionFile: join(jobDir, 'w.txt'),
  });
}

function homeWith(key: string): string {
  const home = tempDir(`gaffer-home-${key}-`);
  const user = USER_SETTINGS[key];
  if (user !== undefined) {
    mkdirSync(dirname(join(home, user.file)), { recursive: true });
    writeFileSync(join(home, user.file), user.content);
  }
  return home;
}

describe('agent CLI homes are merged, never overwritten', () => {
  for (const profile of CLI_PROFILES.values()) {
    it(`${profile.key}: a configured home that already has settings keeps them after a run is set up`, async () => {
      const home = homeWith(profile.key);
      await setUpRun(profile, home, null);
      const user = USER_SETTINGS[profile.key];
      if (user === undefined) throw new Error(`no user settings for ${profile.key}`);
      const after = readFileSync(join(home, user.file), 'utf8');
      const written = (profile.files ?? []).find((f) => f.name === user.file);
      if (written === undefined) {
        // gaffer writes nothing there: the user's file is byte for byte what it was
        expect(after).toBe(user.content);
        return;
      }
      // gaffer's keys are in, every key of the user's is still there
      const merged = JSON.parse(after) as Record<string, unknown>;
      expect(merged).toEqual(
        mergeTables(
          JSON.parse(user.content) as Record<string, unknown>,
          JSON.parse(written.content(null)) as Record<string, unknown>,
        ),
      );
      expect(merged).toMatchObject(JSON.parse(user.content) as Record<string, unknown>);
    });
  }

  it('gemini: the user keeps security.auth.selectedType and their other settings; gaffer adds one attempt per request', async () => {
    const home = homeWith('gemini');
    await setUpRun(CLI_PROFILES.get('gemini')!, home, null);
    const settings = JSON.parse(readFileSync(join(home, '.gemini', 'settings.json'), 'utf8'));
    expect(settings.security.auth.selectedType).toBe('oauth-personal');
    expect(settings.ui).toEqual({ theme: 'GitHub' });
    expect(settings.general).toEqual({
      vimMode: true,
      maxAttempts: 1,
      retryFetchErrors: false,
      disableAutoUpdate: true,
    });

    // pointed at an endpoint, gaffer needs the API-key auth; the rest stays the user's
    await setUpRun(CLI_PROFILES.get('gemini')!, home, { url: 'http://127.0.0.1:9', key: 'k' });
    const again = JSON.parse(readFileSync(join(home, '.gemini', 'settings.json'), 'utf8'));
    expect(again.security.auth.selectedType).toBe('gemini-api-key');
    expect(again.ui).toEqual({ theme: 'GitHub' });
    expect(again.general.vimMode).toBe(true);
  });

  it("a fresh home gets gaffer's settings as they are", async () => {
    const home = tempDir('gaffer-home-fresh-');
    await setUpRun(CLI_PROFILES.get('gemini')!, home, null);
    expect(JSON.parse(readFileSync(join(home, '.gemini', 'settings.json'), 'utf8'))).toEqual({
      general: { maxAttempts: 1, retryFetchErrors: false, disableAutoUpdate: true },
      privacy: { usageStatisticsEnabled: false },
    });
  });
});

describe('writeMergedSettings', () => {
  it('merges TOML key by key too', () => {
    const file = join(tempDir(), 'config.toml');
    writeFileSync(file, 'model = "o3"\n[features]\nweb = true\n');
    writeMergedSettings(file, '[features]\nanalytics = false\n');
    expect(readFileSync(file, 'utf8')).toContain('model = "o3"');
    expect(readFileSync(file, 'utf8')).toMatch(/web = true/);
    expect(readFileSync(file, 'utf8')).toMatch(/analytics = false/);
  });

  it('never overwrites a file it cannot read: it throws and leaves it as it was', () => {
    const file = join(tempDir(), 'settings.json');
    const commented = '// mine\n{"a": 1}\n';
    writeFileSync(file, commented);
    expect(() => writeMergedSettings(file, '{"b": 2}')).toThrow(/is not valid JSON[\s\S]*will not overwrite it/);
    expect(readFileSync(file, 'utf8')).toBe(commented);
  });
});
