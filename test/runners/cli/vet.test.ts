import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../src/config/config.js';
import { GafferError } from '../../../src/domain/errors.js';
import { buildInvocation } from '../../../src/runners/cli/invocation.js';
import { getCliProfile } from '../../../src/runners/cli/profiles.js';
import { vetCliRunner } from '../../../src/runners/cli/vet.js';
import { AGENTS_BIN, agentBinary } from './harness.js';

function codeOf(run: () => unknown): { code: string; message: string } | null {
  try {
    run();
    return null;
  } catch (err) {
    if (err instanceof GafferError) return { code: err.code, message: err.message };
    throw err;
  }
}

const enabled = (key: string) => ({
  runners: { ...DEFAULT_CONFIG.runners, [key]: { enabled: true, billing: 'subscription' as const, home: null } },
});

describe('vetting an agent CLI before anything starts', () => {
  it('an unknown runner is unknown_runner', () => {
    expect(codeOf(() => vetCliRunner('aider', DEFAULT_CONFIG))?.code).toBe('unknown_runner');
  });

  it('agent CLIs are off until enabled: runner_disabled says how to enable', () => {
    const refusal = codeOf(() => vetCliRunner('claude', DEFAULT_CONFIG));
    expect(refusal?.code).toBe('runner_disabled');
    expect(refusal?.message).toContain('runners.claude.enabled');
  });

  it('an enabled CLI that is not installed is runner_not_installed with the install command', () => {
    const refusal = codeOf(() => vetCliRunner('codex', enabled('codex'), { binDirs: ['/nonexistent'] }));
    // PATH may hold a codex; only assert when it does not
    if (refusal !== null) {
      expect(refusal.code).toBe('runner_not_installed');
      expect(refusal.message).toContain('npm i -g @openai/codex@0.171.0');
    }
  });

  // the agent CLIs are installed by scripts/install-agent-clis.sh (npm test runs it); CI=true requires them
  it.skipIf(agentBinary('qwen') === null)('an enabled, installed CLI passes with its version', () => {
    expect(vetCliRunner('qwen', enabled('qwen'), { binDirs: [AGENTS_BIN] })).toBe('0.15.10');
  });

  it('shell and builtin need no vetting here', () => {
    expect(vetCliRunner('shell', DEFAULT_CONFIG)).toBeNull();
  });
});

describe('the headless argv from the profile template', () => {
  const base = {
    model: null,
    resume: null,
    endpoint: null,
    home: null,
    userHome: '/home/u',
    tmpDir: '/data/tmp',
    instructionFile: '/data/i.txt',
    isRoot: false,
  };

  it('claude: the prompt is one argv element, model and resume only when given', () => {
    const prompt = 'fix it; rm -rf / "quoted" $(x)';
    expect(buildInvocation(getCliProfile('claude')!, { ...base, instruction: prompt }).args).toEqual([
      '-p',
      prompt,
      '--output-format',
      'stream-json',
      '--verbose',
      '--permission-mode',
      'bypassPermissions',
    ]);
    expect(
      buildInvocation(getCliProfile('claude')!, {
        ...base,
        instruction: 'x',
        model: 'claude-sonnet-4-5',
        resume: 'abc',
      }).args.slice(-4),
    ).toEqual(['--model', 'claude-sonnet-4-5', '--resume', 'abc']);
  });

  it('codex resumes with exec resume <thread> <prompt>', () => {
    const args = buildInvocation(getCliProfile('codex')!, { ...base, instruction: 'go on', resume: 'T1' }).args;
    expect(args.slice(0, 2)).toEqual(['exec', 'resume']);
    expect(args.slice(-2)).toEqual(['T1', 'go on']);
  });

  it('opencode takes the prompt on stdin, never as an argv element', () => {
    const inv = buildInvocation(getCliProfile('opencode')!, { ...base, instruction: 'two words' });
    expect(inv.promptOnStdin).toBe(true);
    expect(inv.args).not.toContain('two words');
    expect(inv.env.OPENCODE_DISABLE_AUTOUPDATE).toBe('1');
  });

  it("a private home moves HOME and XDG there; codex's CODEX_HOME lies in it, not under TMPDIR", () => {
    const inv = buildInvocation(getCliProfile('codex')!, { ...base, instruction: 'x', home: '/data/agents/codex' });
    expect(inv.env).toMatchObject({
      HOME: '/data/agents/codex',
      CODEX_HOME: '/data/agents/codex/.codex',
      TMPDIR: '/data/tmp',
    });
  });

  it('claude turns its own retries off and, as root, says it is sandboxed', () => {
    const inv = buildInvocation(getCliProfile('claude')!, { ...base, instruction: 'x', isRoot: true });
    expect(inv.env).toMatchObject({ CLAUDE_CODE_MAX_RETRIES: '0', IS_SANDBOX: '1' });
  });
});
