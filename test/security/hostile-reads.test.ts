import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { CALC_FILES, makeWorkspace, tempDir } from '../helpers/temp.js';
import { JOB_BOUND_MS, runJob as runServed, underWatch as watched, worst } from './hostile-serve.js';
import type { Served } from '../reliability/helpers.js';

// issue 32 point 2: a FIFO at package.json, .gaffer/workspace.json or .git/config blocked gaffer's
// main thread in a synchronous read (/api/health stopped answering; a job with a 10 s verification
// timeout ran 679 s), and package.json -> /dev/zero grew gaffer from 125 MB to 1.5 GB. Point 6: job
// 1's worker wrote `.gaffer/workspace.json` with `verify.command: "echo all tests passed"`, and job 2
// (verify auto) was proved by it while the real tests failed. Every hostile thing here is planted by
// a sandboxed shell worker; the next job reads the workspace it left.
const probe = probeSandbox();

/** The calc project (its tests fail: add() subtracts), committed; `hints`: with a hints file that names the real test command. */
function calcRepo(hints: boolean): string {
  return makeWorkspace(
    {
      ...CALC_FILES,
      ...(hints ? { '.gaffer/workspace.json': JSON.stringify({ verify: { command: 'npm test' } }) } : {}),
    },
    { git: true },
  );
}

let served: Served;
const outside = tempDir('gaffer-hostile-outside-');

afterAll(() => {
  if (probe.available)
    console.info(
      `hostile reads: /api/health at worst ${Math.round(worst.healthMs)} ms slower than a bare server; gaffer serve peak RSS ${worst.rssMb} MB`,
    );
});

/** Runs `attack` against a `gaffer serve` of its own while /api/health is polled (hostile-serve.ts). */
const underWatch = (attack: () => Promise<void>) =>
  watched(async (s) => {
    served = s;
    await attack();
  });

/** A job through the server to its end, `verify: auto`. */
const runJob = (workspace: string, command: string) => runServed(served, workspace, command);

const outsideTarget = join(outside, 'passwd.json');
writeFileSync(outsideTarget, JSON.stringify({ name: 'secret', scripts: { test: 'echo all tests passed' } }));

describe.skipIf(!probe.available)(
  'a hostile workspace: every read is bounded, nothing blocks, hints steer nothing (issue 32)',
  () => {
    // [what, the planting command, the file the next job's verdict names, the words it says]
    const attacks: [string, string, string, RegExp][] = [
      [
        'a FIFO at package.json',
        'rm package.json && mkfifo package.json',
        'package.json',
        /a FIFO, not a regular file/,
      ],
      [
        'a FIFO at .gaffer/workspace.json',
        'rm .gaffer/workspace.json && mkfifo .gaffer/workspace.json',
        '.gaffer/workspace.json',
        /a FIFO, not a regular file/,
      ],
      [
        'package.json -> /dev/zero',
        'rm package.json && ln -s /dev/zero package.json',
        'package.json',
        /a link out of .*\/dev\/zero/,
      ],
      [
        'package.json -> a file outside the workspace',
        `rm package.json && ln -s ${outsideTarget} package.json`,
        'package.json',
        /a link out of .*passwd\.json/,
      ],
    ];

    it.each(attacks)(
      '%s: the planting job and the next one end within their timeouts, the next names the file',
      (_what, plant, file, words) =>
        underWatch(async () => {
          const ws = calcRepo(file === '.gaffer/workspace.json');
          const first = await runJob(ws, plant);
          expect(first.job.result.workers[0].sandboxed).toBe(true);
          expect(first.ms).toBeLessThan(JOB_BOUND_MS);
          const next = await runJob(ws, 'true');
          expect(next.ms).toBeLessThan(JOB_BOUND_MS);
          const named = (next.job.result.verification.ignored_files ?? []) as string[];
          expect(named.join('\n')).toMatch(new RegExp(`^${file.replace(/\./g, '\\.')}:? .*${words.source}`, 'm'));
          expect(next.job.verdict).toContain(`not gone by: ${file}`);
          // nothing unread proved anything
          expect(next.job.result.proof?.verdict).not.toBe('proved');
          console.info(`${_what}: planting job ${first.ms} ms, next job ${next.ms} ms; verdict: ${next.job.verdict}`);
        }),
      2 * JOB_BOUND_MS,
    );

    // git itself blocks opening a FIFO config: gaffer's own reads of it are bounded here, and the lead's
    // runGit change refuses a .git/config that is not a regular file before any git call; until that is
    // merged, gaffer's `git diff --shortstat HEAD` in the workspace waits out its 120 s timeout
    // (measured: the planting job sat 145 s in "checking what changed on disk", /api/health 255 ms)
    it(
      'a FIFO at .git/config: both jobs are bounded and the server stays healthy (refused by name, or a clean result)',
      () =>
        underWatch(async () => {
          const ws = calcRepo(false);
          const first = await runJob(ws, 'rm .git/config && mkfifo .git/config');
          expect(first.job.result.workers[0].sandboxed).toBe(true);
          const next = await runJob(ws, 'true');
          console.info(
            `FIFO at .git/config: planting job ${first.ms} ms (${first.job.status}), next job ${next.ms} ms (${next.job.status}): ${next.job.verdict}`,
          );
          for (const run of [first, next]) expect(run.ms).toBeLessThan(JOB_BOUND_MS);
          expect(next.job.result?.proof?.verdict ?? 'unproved').not.toBe('proved');
        }),
      2 * JOB_BOUND_MS,
    );

    it(
      'hints an earlier worker wrote steer nothing: job 2 runs the real tests, fails, and names the uncommitted hints file',
      () =>
        underWatch(async () => {
          const ws = makeWorkspace(CALC_FILES, { git: true });
          const first = await runJob(
            ws,
            `mkdir -p .gaffer && echo '{"verify":{"command":"echo all tests passed"}}' > .gaffer/workspace.json`,
          );
          expect(first.job.result.workers[0].sandboxed).toBe(true);
          const next = await runJob(ws, 'true');
          const v = next.job.result.verification;
          expect(v).toMatchObject({ command: 'npm test', mode: 'auto', ok: false });
          expect(v.ignored_files).toEqual([
            '.gaffer/workspace.json not committed: ignored (hints are read as committed at HEAD)',
          ]);
          expect(next.job.verdict).toContain('not gone by: .gaffer/workspace.json not committed');
          expect(next.job.result.proof.verdict).not.toBe('proved');
          expect(next.job.status).not.toBe('done');
        }),
      2 * JOB_BOUND_MS,
    );

    it(
      "a committed hints file a worker changed: HEAD's command runs, the change is named",
      () =>
        underWatch(async () => {
          const ws = makeWorkspace(
            { ...CALC_FILES, '.gaffer/workspace.json': JSON.stringify({ verify: { command: 'node --test test/' } }) },
            { git: true },
          );
          await runJob(ws, `echo '{"verify":{"command":"echo all tests passed"}}' > .gaffer/workspace.json`);
          const next = await runJob(ws, 'true');
          expect(next.job.result.verification).toMatchObject({
            command: 'node --test test/',
            mode: 'configured',
            ok: false,
          });
          expect(next.job.verdict).toContain(
            "not gone by: .gaffer/workspace.json changed since HEAD: ignored (HEAD's hints used)",
          );
          expect(next.job.result.proof.verdict).not.toBe('proved');
        }),
      2 * JOB_BOUND_MS,
    );
  },
);
