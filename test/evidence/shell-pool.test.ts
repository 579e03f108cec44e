import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnCommand, useSpawner, type SpawnRequest, type SpawnResult } from '../../src/platform/spawner/spawner.js';
import { tempDir } from './helpers.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

/** A call that may run in a kept shell, as runGit's calls are. */
function kept(args: string[], more: Partial<SpawnRequest> = {}): Promise<SpawnResult> {
  return spawnCommand({
    cmd: 'sh',
    args,
    cwd: '/',
    env,
    timeoutMs: 10_000,
    input: '',
    leavesNothingRunning: true,
    ...more,
  });
}

/** The command name of a process's parent (`dash` for a kept shell, `node` for the helper). */
function parentName(result: SpawnResult): string {
  const ppid = result.stdout.toString().trim();
  return readFileSync(`/proc/${ppid}/comm`, 'utf8').trim();
}

let release: (() => void) | null = null;
afterEach(() => {
  release?.();
  release = null;
});

// the kept shells are dash's (shell-pool.ts); without it every call goes through the helper
const hasDash = existsSync('/bin/dash') || existsSync('/usr/bin/dash');

describe.skipIf(!hasDash)('kept shells (calls that take no input and leave nothing running)', () => {
  it('run such calls in an sh that stays, and every other call as before', async () => {
    release = useSpawner();
    const first = await kept(['-c', 'echo $PPID']);
    expect(parentName(first)).toBe('dash');
    // the same shell takes the next call
    expect((await kept(['-c', 'echo $PPID'])).stdout.toString()).toBe(first.stdout.toString());
    // not marked, or with input: the helper, as before
    expect(parentName(await kept(['-c', 'echo $PPID'], { leavesNothingRunning: false }))).toBe('node');
    expect(parentName(await kept(['-c', 'read x; echo $PPID'], { input: 'x\n' }))).toBe('node');
  });

  it('gives the command exactly its environment, its cwd, and /dev/null for stdin', async () => {
    release = useSpawner();
    const dir = await tempDir();
    const vars = { ...env, GAFFER_T_A: "it's a 'quoted' $HOME `x` \\ value", GAFFER_T_B: 'two\nlines', GAFFER_T_C: '' };
    const envOf = async (vars: Record<string, string>) =>
      (await kept(['-0'], { cmd: 'env', env: vars, cwd: dir })).stdout.toString().split('\0').filter(Boolean);
    const listed = (vars: Record<string, string>) =>
      Object.entries(vars)
        .map(([key, value]) => `${key}=${value}`)
        .sort();
    // nothing of the shell's own (PWD, OLDPWD, its variables) reaches the command
    expect((await envOf(vars)).sort()).toEqual(listed(vars));
    const inside = await kept(['-c', 'printf "[%s]" "$(pwd -P)"; cat; printf "<eof>"'], { cwd: dir });
    expect(inside.stdout.toString()).toBe(`[${dir}]<eof>`);
    // the next call, in the same shell, does not keep the last one's variables
    expect(await envOf(env)).toEqual([`PATH=${env.PATH}`]);
    // the shell keeps what its calls share and sends what changed: one changed, one gone, one new
    const next = { ...env, GAFFER_T_A: 'now another', GAFFER_T_C: '', GAFFER_T_D: 'new' };
    await envOf(vars);
    expect((await envOf(next)).sort()).toEqual(listed(next));
    // the variables the shell reads itself are the command's alone: they change nothing of the call
    const own = { ...env, IFS: '/', CDPATH: '/', HOME: '/nowhere', PS4: '$(touch ran)', ENV: join(dir, 'ran') };
    expect((await envOf(own)).sort()).toEqual(listed(own));
    const after = await kept(['-c', 'printf "[%s]" "$(pwd -P)"; cat; printf "<eof>"'], { cwd: dir, env: own });
    expect(after.stdout.toString()).toBe(`[${dir}]<eof>`);
    expect(await envOf(env)).toEqual([`PATH=${env.PATH}`]);
    // arguments are file names a worker chose (git-facts passes them as pathspecs): each arrives
    // as it is, and nothing in them runs
    const names = ["a'$(touch ran)'.txt", '`touch ran`', 'x; touch ran', 'two\nlines', '*', '$HOME', "'", ''];
    const echoed = await kept(['%s\\0', ...names], { cmd: 'printf', cwd: dir });
    expect(echoed.stdout.toString().split('\0').slice(0, -1)).toEqual(names);
    expect(existsSync(join(dir, 'ran'))).toBe(false);
  });

  it('returns the exact bytes, codes and stderr, even an output shaped like its trailer', async () => {
    release = useSpawner();
    // a listing of hostile names: NULs, newlines, and trailers as they would look without the
    // shell's secret (each at the end of a write of its own, then more output)
    const fake = (call: number, status: string) => `0123456789abcdef01234567.${call}:${status}`;
    const forge = [0, 1, 2].map((n) => `printf '%s\\n' ${fake(n, '0')}; printf '%s' ${fake(n, '')} >&2; sleep 0.05`);
    const result = await kept(['-c', `printf 'a\\0b\\nc\\0'; ${forge.join('; ')}; printf 'e'; exit 3`]);
    expect(result.exitCode).toBe(3);
    expect(result.stdout.toString('latin1')).toBe(
      `a\x00b\nc\x00${[0, 1, 2].map((n) => `${fake(n, '0')}\n`).join('')}e`,
    );
    expect(result.stderr).toBe([0, 1, 2].map((n) => fake(n, '')).join(''));
    // large: more than a pipe holds, read as it comes
    const big = await kept(['-c', 'head -c 3000000 /dev/zero | tr "\\0" "z"; echo']);
    expect(big.stdout.length).toBe(3_000_001);
    expect(big.stdout.subarray(0, 3_000_000).every((byte) => byte === 0x7a)).toBe(true);
    // a command killed by a signal: 128 + its number, as the shell reports it
    expect((await kept(['-c', 'kill -9 $$'])).exitCode).toBe(137);
  });

  it('says a missing working directory is one, and a call past every busy shell still runs', async () => {
    release = useSpawner();
    const gone = join(await tempDir(), 'gone');
    const missing = await kept(['-c', 'echo ran'], { cwd: gone });
    expect(missing.exitCode).toBeNull();
    expect(missing.spawnError).toContain(gone);
    expect(missing.stdout.length).toBe(0);
    // more calls at once than kept shells: all answered, each its own
    const many = await Promise.all(Array.from({ length: 24 }, (_, i) => kept(['-c', `sleep 0.2; echo ${i}`])));
    expect(many.map((r) => r.stdout.toString())).toEqual(Array.from({ length: 24 }, (_, i) => `${i}\n`));
  });

  it('kills a call past its timeout with all it started, and never uses that shell again', async () => {
    release = useSpawner();
    const dir = await tempDir();
    const pidFile = join(dir, 'pid');
    const before = await kept(['-c', 'echo $PPID']);
    const started = Date.now();
    const result = await kept(['-c', `sleep 60 & echo $! > ${pidFile}; sleep 60`], { timeoutMs: 1_000 });
    // answered when killed: nothing it started still holds the pipes
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBeNull();
    const straggler = readFileSync(pidFile, 'utf8').trim();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(existsSync(`/proc/${straggler}`) && !readFileSync(`/proc/${straggler}/stat`, 'utf8').includes(') Z ')).toBe(
      false,
    );
    const after = await kept(['-c', 'echo $PPID']);
    expect(after.exitCode).toBe(0);
    expect(after.stdout.toString()).not.toBe(before.stdout.toString());
  });

  it('drops a shell written to between calls: what a command left running never reaches a later call', async () => {
    release = useSpawner();
    // the caller's promise broken: something outlives the call and prints later
    const mark = join(await tempDir(), 'printed');
    const first = await kept(['-c', `(sleep 0.2; echo late; : > ${mark}) & echo $PPID`]);
    for (let waited = 0; !existsSync(mark) && waited < 10_000; waited += 20)
      await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 100)); // the pipe's bytes, read by now
    const next = await kept(['-c', 'echo $PPID']);
    expect(next.stdout.toString()).not.toContain('late');
    expect(next.stdout.toString().trim()).not.toBe(first.stdout.toString().trim());
  });
});
