import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';
import { call } from '../reliability/helpers.js';
import { JOB_BOUND_MS, runJob, settled, underWatch, worst } from './hostile-serve.js';

// Issue 32 point 7: the table of attacks. Each row is planted by a sandboxed shell worker through a
// real `gaffer serve` (default config: sandbox on, bwrap), with /api/health polled from another
// process the whole time (under 1 s) and the server's peak RSS bounded; each checks a marker outside
// the sandbox and the verdict. The classes' own files go deeper: git-config-attack, hostile-reads,
// hostile-hints (security/), planted-links, unix-sockets (sandbox/), hidden-by-ignore, odd-paths,
// dependencies-changed (engine/).
const probe = probeSandbox();
const outside = tempDir('gaffer-table-outside-');
const SECRET = `secret-${process.pid}-${Date.now()}`;

afterAll(() => {
  if (probe.available)
    console.info(
      `attack table: /api/health at worst ${Math.round(worst.healthMs)} ms slower than a bare server; gaffer serve peak RSS ${worst.rssMb} MB`,
    );
});

/** A script that appends what ran it to `marker` and passes its input on (a filter, a driver, a hook). */
const planted = (marker: string) => `#!/bin/sh\\necho "ran $0 $*" >> ${marker}\\ncat\\n`;

/** Plants a filter, a textconv, a merge driver, an fsmonitor and hooks in the repository's config, named by attributes. */
function plantGitCode(marker: string): string {
  return [
    'GD=$(git rev-parse --path-format=absolute --git-common-dir)',
    `printf '${planted(marker)}' > "$GD/evil.sh" && chmod +x "$GD/evil.sh"`,
    'printf \'[filter "evil"]\\n\\tclean = %s\\n\\tsmudge = %s\\n[diff "evil"]\\n\\ttextconv = %s\\n[merge "evil"]\\n\\tdriver = %s\\n[core]\\n\\tfsmonitor = %s\\n\' "$GD/evil.sh" "$GD/evil.sh" "$GD/evil.sh" "$GD/evil.sh" "$GD/evil.sh" >> "$GD/config"',
    'echo "* filter=evil diff=evil merge=evil" > .gitattributes',
    FIX_ADD,
  ].join(' && ');
}

/** Lines written to a marker (none when it does not exist). */
const ranIn = (marker: string) => (existsSync(marker) ? readFileSync(marker, 'utf8') : '');

/** A listener on a unix socket of the host that writes what it is sent to `marker`. */
function hostSocket(path: string, marker: string): Promise<Server> {
  rmSync(path, { force: true });
  const server = createServer((c) => c.on('data', (d) => writeFileSync(marker, d, { flag: 'a' })));
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

describe.skipIf(!probe.available)(
  'the attack table: a sandboxed worker plants, gaffer after it is not steered (issue 32)',
  () => {
    it(
      'git code in the config and attributes: no step of gaffer runs it — the shared job, the next one, a follow-up, a worktree job and its merge',
      () =>
        underWatch(async (served) => {
          const marker = join(outside, 'git-code');
          const ws = makeWorkspace({ ...CALC_FILES, 'b.txt': 'b\n' }, { git: true });
          const first = await runJob(served, ws, plantGitCode(marker));
          expect(first.job.result.workers[0].sandboxed).toBe(true);
          expect(first.job.verdict).toMatch(
            /^planted git code that your next git command here would run \(gaffer's did not\): \.git\/config \(core\.fsmonitor, diff\.evil\.textconv, filter\.evil\.clean, filter\.evil\.smudge \+1\), \.gitattributes \(filter=evil, diff=evil, merge=evil\)/,
          );
          expect(first.job.result.proof.verdict).not.toBe('proved');
          const next = await runJob(served, ws, 'echo more >> b.txt');
          const follow = await call(
            served.url,
            'POST',
            `/api/jobs/${first.job.id}/tasks/${first.job.result.workers[0].name}/follow-up`,
            { comments: [{ file: 'src/math.js', line: 2, text: 'again' }] },
          );
          expect(follow.status, follow.text).toBe(202);
          await settled(served, follow.json.id);
          const fanned = await runJob(served, ws, '', {
            isolation: 'worktree',
            merge: 'auto',
            parallel: true,
            verify: 'exit 0',
            tasks: [
              { name: 'one', instruction: 'edit', files: ['b.txt'], command: 'echo one >> b.txt' },
              { name: 'two', instruction: 'edit', files: ['src/other.txt'], command: 'echo two > src/other.txt' },
            ],
          });
          expect(ranIn(marker)).toBe('');
          expect(next.job.status).toBe('done');
          expect(fanned.job.result.worktrees.merges.length).toBeGreaterThan(0);
          // the plant is real: the user's own git runs it
          execFileSync('git', ['diff', 'HEAD'], {
            cwd: ws,
            stdio: 'ignore',
            env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' },
          });
          expect(ranIn(marker)).not.toBe('');
        }),
      4 * JOB_BOUND_MS,
    );

    it(
      'a dependency link to a credential store: the next sandbox binds none of it (the verification cannot copy the key)',
      () => {
        const home = tempDir('gaffer-table-home-');
        mkdirSync(join(home, '.ssh'), { recursive: true });
        writeFileSync(join(home, '.ssh', 'id_rsa'), SECRET);
        return underWatch(
          async (served) => {
            const ws = makeWorkspace(CALC_FILES, { git: true });
            await runJob(served, ws, `mkdir -p node_modules && ln -s ${home}/.ssh node_modules/x && ${FIX_ADD}`);
            const next = await runJob(served, ws, 'true', { verify: 'cat node_modules/x/id_rsa > leaked.txt; exit 0' });
            expect(next.job.status).not.toBe('error');
            expect(
              existsSync(join(ws, 'leaked.txt')) ? readFileSync(join(ws, 'leaked.txt'), 'utf8') : '',
            ).not.toContain(SECRET);
          },
          { HOME: home },
        );
      },
      3 * JOB_BOUND_MS,
    );

    it(
      'a host unix socket under /var/tmp and under /run: the worker and its verification reach neither',
      () =>
        underWatch(async (served) => {
          const marker = join(outside, 'socket');
          const paths = [
            join(tempDir('gaffer-table-sock-').replace(/^\/tmp/, '/var/tmp'), 's.sock'),
            `/run/gaffer-table-${process.pid}.sock`,
          ];
          mkdirSync(join(paths[0] as string, '..'), { recursive: true });
          const servers = await Promise.all(paths.map((p) => hostSocket(p, marker)));
          try {
            // the listener works from outside: the check can fail
            // not execFileSync: the listener answers in this process's event loop
            await promisify(execFile)(process.execPath, [
              '-e',
              `require('net').connect(${JSON.stringify(paths[0])}).end('probe')`,
            ]);
            await new Promise((r) => setTimeout(r, 200));
            expect(ranIn(marker)).toBe('probe');
            rmSync(marker);
            const reach = paths
              .map((p) => `node -e "require('net').connect('${p}').on('error',()=>{}).end('pwned')"`)
              .join('; ');
            const job = await runJob(served, makeWorkspace(CALC_FILES, { git: true }), `${reach}; ${FIX_ADD}`, {
              verify: `${reach}; npm test`,
            });
            await new Promise((r) => setTimeout(r, 200));
            expect(ranIn(marker)).toBe('');
            expect(job.job.status).toBe('done');
          } finally {
            for (const s of servers) s.close();
            for (const p of paths) rmSync(p, { force: true });
          }
        }),
      2 * JOB_BOUND_MS,
    );

    it(
      'a file hidden by an ignore rule the worker wrote, outside its files: seen, a write-policy violation, not done',
      () =>
        underWatch(async (served) => {
          const ws = makeWorkspace(CALC_FILES, { git: true });
          const plant = `${FIX_ADD} && printf 'hidden.js\\n.gitignore\\n' > .gitignore && echo 'globalThis.x = 1' > hidden.js`;
          const { job } = await runJob(served, ws, plant, {
            tasks: [{ instruction: 'fix add', files: ['src/math.js'], command: plant }],
          });
          expect(job.status).toBe('partial');
          expect(job.result.files_changed).toEqual(expect.arrayContaining(['.gitignore', 'hidden.js', 'src/math.js']));
          expect(job.result.workers[0].error).toContain('hidden.js');
        }),
      JOB_BOUND_MS,
    );

    it(
      'a file name that is not UTF-8, outside its files: listed escaped, a write-policy violation',
      () =>
        underWatch(async (served) => {
          const ws = makeWorkspace(CALC_FILES, { git: true });
          const plant = `${FIX_ADD} && printf x > "src/caf$(printf '\\351').js"`;
          const { job } = await runJob(served, ws, plant, {
            tasks: [{ instruction: 'fix add', files: ['src/math.js'], command: plant }],
          });
          expect(job.status).toBe('partial');
          expect(job.result.workers[0].error).toContain('"src/caf\\351.js"');
        }),
      JOB_BOUND_MS,
    );

    it(
      'a dependency patched with no manifest or lockfile change: not done, named first',
      () =>
        underWatch(async (served) => {
          const ws = makeWorkspace({ ...CALC_FILES, '.gitignore': 'node_modules/\n' }, { git: true });
          mkdirSync(join(ws, 'node_modules', 'leftpad'), { recursive: true });
          writeFileSync(join(ws, 'node_modules', 'leftpad', 'package.json'), '{"name":"leftpad","version":"1.0.0"}');
          writeFileSync(join(ws, 'node_modules', 'leftpad', 'index.js'), 'module.exports = (s) => s;\n');
          const { job } = await runJob(
            served,
            ws,
            `${FIX_ADD} && echo 'module.exports = () => "pwned";' > node_modules/leftpad/index.js`,
          );
          expect(job.status).toBe('partial');
          expect(job.verdict).toMatch(/^dependencies changed without a manifest or lockfile change: node_modules/);
        }),
      JOB_BOUND_MS,
    );
  },
);
