import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CompactJob } from '../../src/engine/queries/compact.js';
import { Engine } from '../../src/engine/engine.js';
import type { Runner } from '../../src/runners/contract.js';
import { createRunners } from '../../src/runners/index.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { createSandbox, type Sandbox } from '../../src/platform/sandbox/sandbox.js';
import { ShellRunner } from '../../src/runners/shell/shell-runner.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { changesOf, proofOf, resultOf, verificationOf, workerOf } from '../helpers/answer.js';

const probe = probeSandbox();
const SKIP = probe.available ? '' : ` — SKIPPED: bubblewrap does not work here (${probe.reason})`;

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function openEngine(runners?: ReadonlyMap<string, Runner>, sandbox?: Sandbox): Promise<Engine> {
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    ...(runners ? { runners } : {}),
    ...(sandbox ? { sandbox } : {}),
  });
  engines.push(engine);
  return engine;
}

async function runToEnd(engine: Engine, body: Record<string, unknown>): Promise<CompactJob> {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id, { full: true });
}

const marker = () => `gaffer-sandbox-${randomBytes(6).toString('hex')}`;

/** Live (non-zombie) processes whose command line holds `text`, read from the host's /proc. */
function processesWith(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'Z' && state !== 'X') found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function waitUntil(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/**
 * A worker that ignores SIGTERM, forks two children that ignore it too, and one that leaves the
 * process group with setsid: every one carries `tag` in its command line.
 */
function stubbornCommand(tag: string): string {
  return [
    "trap '' TERM",
    `sh -c 'while :; do sleep 1; done; : ${tag}' &`,
    `sh -c 'while :; do sleep 1; done; : ${tag}' &`,
    `setsid sh -c 'while :; do sleep 1; done; : ${tag}' &`,
    'echo ready',
    `while :; do sleep 1; done; : ${tag}`,
  ].join('\n');
}

describe.skipIf(!probe.available)(`the sandbox: shell workers under bubblewrap${SKIP}`, () => {
  it('a worker writing outside its workspace fails and the file does not exist; the row says sandboxed: true', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    // one target on the read-only root, one in another temp dir (hidden by the private /tmp)
    const onRoot = join('/var', `gaffer-escape-${randomBytes(6).toString('hex')}`);
    const otherTmp = join(tempDir('gaffer-other-'), 'escape.txt');
    try {
      for (const target of [onRoot, otherTmp]) {
        const job = await runToEnd(engine, {
          workspace: ws,
          verify: 'none',
          tasks: [{ instruction: 'escape', command: `echo x > ${JSON.stringify(target)}` }],
        });
        expect(resultOf(job).workers[0]).toMatchObject({
          status: 'error',
          stop_reason: 'exit_nonzero',
          sandboxed: true,
        });
        expect(existsSync(target)).toBe(false);
        expect(changesOf(job).count).toBe(0);
      }
      // under HOME the write works in the run's private HOME and is gone after it
      const inHome = join(homedir(), `gaffer-escape-${randomBytes(6).toString('hex')}`);
      const job = await runToEnd(engine, {
        workspace: ws,
        verify: 'none',
        tasks: [
          { instruction: 'escape', command: `echo x > ${JSON.stringify(inHome)} && cat ${JSON.stringify(inHome)}` },
        ],
      });
      expect(resultOf(job).workers[0]).toMatchObject({ status: 'done', sandboxed: true });
      expect(existsSync(inHome)).toBe(false);
    } finally {
      rmSync(onRoot, { force: true });
    }
  });

  it('the same worker writing inside its workspace works, and its private /tmp is where TMPDIR points', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const hostFile = join(tempDir('gaffer-host-'), 'host-only.txt');
    writeFileSync(hostFile, 'host\n');
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          instruction: 'write',
          command: `echo hi > inside.txt && echo scratch > "$TMPDIR/t" && echo "$TMPDIR" > tmpdir.txt && if [ -e ${JSON.stringify(hostFile)} ]; then echo seen > host-seen.txt; fi`,
        },
      ],
    });
    expect(resultOf(job).workers[0]).toMatchObject({ status: 'done', sandboxed: true });
    expect(readFileSync(join(ws, 'inside.txt'), 'utf8')).toBe('hi\n');
    expect(readFileSync(join(ws, 'tmpdir.txt'), 'utf8')).toBe('/tmp\n');
    // the host's /tmp is not visible inside (only what the sandbox binds there)
    expect(existsSync(join(ws, 'host-seen.txt'))).toBe(false);
    expect(changesOf(job).added).toEqual(['inside.txt', 'tmpdir.txt']);
    expect(job.status).toBe('done');
  });

  it('the instruction file stays readable inside the sandbox', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({});
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'the words to copy', command: 'cp "$GAFFER_INSTRUCTION_FILE" copied.txt' }],
    });
    expect(resultOf(job).workers[0]).toMatchObject({ status: 'done', sandboxed: true });
    expect(readFileSync(join(ws, 'copied.txt'), 'utf8')).toContain('the words to copy');
  });

  it('cancel kills everything inside the sandbox: SIGTERM ignored, forked children, a setsid escapee', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({});
    const tag = marker();
    const { job } = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'stubborn', command: stubbornCommand(tag) }],
    });
    expect(await waitUntil(() => processesWith(tag).length >= 4, 15_000)).toBe(true);
    engine.cancel(job.id);
    await engine.settled(job.id);
    const final = engine.get(job.id, { full: true });
    expect(final.status).toBe('cancelled');
    expect(resultOf(final).workers[0]).toMatchObject({ status: 'cancelled', sandboxed: true });
    expect(processesWith(tag)).toEqual([]);
  });

  it('the timeout kills everything inside the sandbox too', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({});
    const tag = marker();
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'none',
      timeout_s: 10,
      tasks: [{ instruction: 'stubborn', command: stubbornCommand(tag) }],
    });
    expect(resultOf(job).workers[0]).toMatchObject({ status: 'timeout', sandboxed: true });
    expect(processesWith(tag)).toEqual([]);
  }, 60_000);

  it("the verification runs under gaffer's own sandbox policy: sandboxed under auto, unsandboxed under off", async () => {
    const outside = join(tempDir('gaffer-verify-'), 'written-by-verification');
    // passes only when the write outside the workspace fails
    const verify = `if ( echo x > ${JSON.stringify(outside)} ) 2>/dev/null; then echo ESCAPED; exit 1; fi; echo confined`;
    const sandboxed = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const job = await runToEnd(sandboxed, {
      workspace: ws,
      verify,
      tasks: [{ instruction: 'edit', command: 'echo b > b.txt' }],
    });
    expect(workerOf(job).sandboxed).toBe(true);
    expect(verificationOf(job)).toMatchObject({ ran: true, ok: true });
    expect(existsSync(outside)).toBe(false);

    // the same job with the sandbox off: the verification's write lands (so the check above can fail)
    const open = await openEngine(createRunners({ sandbox: 'off' }), createSandbox('off'));
    const ws2 = makeWorkspace({ 'a.txt': 'a\n' });
    const job2 = await runToEnd(open, {
      workspace: ws2,
      verify,
      fix_rounds: 0,
      tasks: [{ instruction: 'edit', command: 'echo b > b.txt' }],
    });
    expect(workerOf(job2).sandboxed).toBe(false);
    expect(verificationOf(job2)).toMatchObject({ ran: true, ok: false });
    expect(existsSync(outside)).toBe(true);
  });

  it('a worker cannot regain power inside: no capabilities, / stays read-only even for root', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({});
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          instruction: 'remount',
          command:
            'grep CapEff /proc/self/status > caps.txt; mount -o remount,rw / 2>/dev/null && echo REMOUNTED > remount.txt; touch /gaffer-root-escape 2>/dev/null && echo WROTE >> remount.txt; true',
        },
      ],
    });
    expect(resultOf(job).workers[0]).toMatchObject({ status: 'done', sandboxed: true });
    expect(readFileSync(join(ws, 'caps.txt'), 'utf8')).toMatch(/CapEff:\s+0+\s*$/);
    expect(existsSync(join(ws, 'remount.txt'))).toBe(false);
    expect(existsSync('/gaffer-root-escape')).toBe(false);
  });
});

describe('the sandbox policy', () => {
  it('a runner declaring itself external that ran unsandboxed costs the proof and is named on the verdict', async () => {
    const inner = new ShellRunner();
    // it says which model served, so the only doubt left is the missing sandbox
    const fake: Runner = {
      key: 'fakecli',
      canResume: false,
      external: true,
      run: async (input) => ({ ...(await inner.run({ ...input, sandbox: false })), modelServed: 'fake-model' }),
    };
    const engine = await openEngine(new Map<string, Runner>([['fakecli', fake], ...createRunners({ sandbox: 'off' })]));
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'test -f b.txt',
      tasks: [{ instruction: 'edit', runner: 'fakecli', command: 'echo b > b.txt' }],
    });
    expect(resultOf(job).workers[0]).toMatchObject({ runner: 'fakecli', status: 'done', sandboxed: false });
    expect(proofOf(job).uncertainty).toContainEqual({
      code: 'external_agent_unsandboxed',
      detail: 'external agent(s) ran unsandboxed: fakecli',
      penalty: 0.2,
    });
    expect(proofOf(job)).toMatchObject({ verdict: 'proved', confidence: 0.8 });
    expect(job.verdict).toContain('external agent(s) ran unsandboxed: fakecli');

    // shell is not an external agent: unsandboxed shell costs nothing
    const shellJob = await runToEnd(engine, {
      workspace: ws,
      verify: 'test -f c.txt',
      tasks: [{ instruction: 'edit', command: 'echo c > c.txt' }],
    });
    expect(resultOf(shellJob).workers[0]).toMatchObject({ runner: 'shell', sandboxed: false });
    expect(proofOf(shellJob).uncertainty.map((u: { code: string }) => u.code)).not.toContain(
      'external_agent_unsandboxed',
    );
    expect(proofOf(shellJob)).toMatchObject({ verdict: 'proved', confidence: 1 });
    expect(shellJob.verdict).not.toContain('unsandboxed');
  });

  describe('without a working sandbox', () => {
    afterEach(() => {
      probeSandbox({ refresh: true });
    });

    it('auto runs the worker unsandboxed and says so; required refuses it with the reason', async () => {
      // no bwrap on PATH for this process's probe
      expect(probeSandbox({ refresh: true, env: { PATH: '/nonexistent' } })).toMatchObject({
        available: false,
        reason: 'bwrap is not on PATH',
      });

      const auto = await openEngine(createRunners({ sandbox: 'auto' }));
      const ws = makeWorkspace({});
      const ran = await runToEnd(auto, {
        workspace: ws,
        verify: 'none',
        tasks: [{ instruction: 'write', command: 'echo hi > inside.txt' }],
      });
      expect(resultOf(ran).workers[0]).toMatchObject({ status: 'done', sandboxed: false });

      const required = await openEngine(createRunners({ sandbox: 'required' }));
      const job = await runToEnd(required, {
        workspace: ws,
        verify: 'none',
        tasks: [{ instruction: 'write', command: 'echo again > refused.txt' }],
      });
      expect(resultOf(job).workers[0]).toMatchObject({
        status: 'refused',
        stop_reason: 'sandbox_unavailable',
        sandboxed: false,
      });
      expect(workerOf(job).error).toContain(
        'the sandbox is required (config sandbox: required) but does not work here: bwrap is not on PATH',
      );
      expect(job.status).toBe('error');
      expect(job.verdict).toContain('sandbox is required');
      expect(existsSync(join(ws, 'refused.txt'))).toBe(false);
    });
  });
});
