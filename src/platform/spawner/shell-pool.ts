import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { singleQuoted } from '../process/shell-quote.js';
import type { SpawnRequest, SpawnResult } from './spawn-request.js';

/**
 * Runs calls that take no input and leave nothing running (a look's `git ls-files`, most git
 * calls) in long-lived shells (`dash`), one per call in flight, kept between calls.
 *
 * Why: a call through the spawner helper paid ~2 ms over the command's own time — the helper is a
 * Node process of ~55 MB, and `fork()` copies its page tables (~1 ms), plus a round trip of IPC
 * messages. `sh` (dash, ~1 MB) forks in ~0.1 ms, and its pipes come here directly: a trivial job
 * makes two such calls.
 *
 * One call, as written to a shell's stdin (every word single-quoted: nothing in a path, an
 * argument or a value is ever read as shell syntax):
 *
 *     export K='v' …; unset K …; if cd -P -- '<cwd>' 2>/dev/null; then unset PWD OLDPWD; K='v' …
 *     '<cmd>' '<arg>' … </dev/null; printf '%s%s\n' <nonce> "$?"; else printf '%scwd\n' <nonce>; fi;
 *     printf '%s' <nonce> >&2
 *
 * - The command gets exactly the request's environment. The shell starts with none; each call
 *   exports what differs from what the shell exports and unsets what the call lacks (git's ~100
 *   variables are the same call after call: sending them all cost ~0.2 ms a call, in quoting here
 *   and parsing there). The variables the shell reads itself (PATH, IFS, CDPATH, …) are never
 *   exported: as `K='v'` before the command they are that command's alone. The variables `cd`
 *   sets are unset before the command. The command is found on the request's PATH here, as spawn
 *   would find it.
 * - It reads /dev/null, never the shell's stdin (the next calls).
 * - Its output ends at a trailer the shell prints once it exited: a nonce of a 96-bit secret
 *   random per shell and the call's count, so no output (a hostile file name in a listing) can end
 *   a call early. Output that comes while no call runs (something the command left running) makes
 *   the shell unusable: it is ended, never given another call.
 * - A timeout kills the shell's whole process group (each shell leads one; the command and
 *   whatever it started are in it), and the shell is not used again.
 * - Killed by a signal, the command's code is 128 + the signal's number, as a shell reports it.
 */
export class ShellPool {
  readonly #idle: Shell[] = [];
  /** Shells alive: idle or in a call. */
  #shells = 0;
  #closed = false;
  /** Resolved command paths by PATH and name (a lookup, as spawn's, costs a stat per PATH entry). */
  readonly #resolved = new Map<string, string | null>();

  /**
   * Runs the request in a shell; null when it is not one for the pool (not `leavesNothingRunning`,
   * input, a relative cwd, a name a shell cannot set) or every shell is busy: the caller runs it
   * as before.
   */
  run(request: SpawnRequest, fallback: (request: SpawnRequest) => Promise<SpawnResult>): Promise<SpawnResult> | null {
    if (
      DASH === undefined ||
      this.#closed ||
      request.leavesNothingRunning !== true ||
      !hasNoInput(request.input) ||
      !isAbsolute(request.cwd)
    )
      return null;
    const file = this.#resolve(request.cmd, request.env.PATH);
    if (file === null) return null;
    let shell = this.#idle.pop();
    while (shell !== undefined && !shell.usable) {
      this.#end(shell);
      shell = this.#idle.pop();
    }
    if (shell === undefined) {
      if (this.#shells >= MAX_SHELLS) return null;
      shell = new Shell();
      this.#shells++;
    }
    const script = shell.script(file, request);
    if (script === null) {
      this.#release(shell);
      return null;
    }
    const used = shell;
    return used.run(script, request.timeoutMs).then((outcome) => {
      this.#release(used);
      if (outcome !== 'lost') return outcome;
      // the shell died under the call: it runs again as the helper's calls do when the helper dies;
      // a shell that never finished a call means none can be started here, and the pool stops
      if (used.calls === 0) this.close();
      return fallback(request);
    });
  }

  /** Ends the idle shells; shells in a call end after it. */
  close(): void {
    this.#closed = true;
    for (const shell of this.#idle.splice(0)) this.#end(shell);
  }

  #release(shell: Shell): void {
    if (shell.usable && !this.#closed) this.#idle.push(shell);
    else this.#end(shell);
  }

  #end(shell: Shell): void {
    shell.end();
    this.#shells--;
  }

  /** The command's path as spawn would find it on PATH; null when that needs the cwd (a relative entry) or finds nothing. */
  #resolve(cmd: string, path: string | undefined): string | null {
    if (cmd.includes('/')) return isAbsolute(cmd) ? cmd : null;
    const key = `${path ?? ''}\0${cmd}`;
    let file = this.#resolved.get(key);
    if (file === undefined) {
      file = null;
      for (const dir of (path ?? '').split(delimiter)) {
        if (!isAbsolute(dir)) break;
        const candidate = join(dir, cmd);
        try {
          accessSync(candidate, constants.X_OK);
          file = candidate;
          break;
        } catch {
          // not here
        }
      }
      this.#resolved.set(key, file);
    }
    return file;
  }
}

/**
 * The shell: dash, which exports nothing of its own but the `PWD`/`OLDPWD` of its `cd` (bash adds
 * `SHLVL` and `_`). Without it the pool is off and every call goes through the helper as before.
 */
const DASH = ['/bin/dash', '/usr/bin/dash'].find((path) => existsSync(path));

/**
 * Shells at most, busy or idle (each is ~0.6 MB, kept for the pool's life). A call past them goes
 * through the helper: a burst of submissions must not fork this (large) process once per call. The
 * throughput bench's burst (50 workspaces' first looks at once) ran a little faster with 48 than
 * with 16 (two interleaved pairs: 1,593 / 1,685 ms against 1,716 / 2,033).
 */
const MAX_SHELLS = 32;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function hasNoInput(input: SpawnRequest['input']): boolean {
  return (typeof input === 'string' || Buffer.isBuffer(input)) && input.length === 0;
}

/**
 * Variables the shell reads itself (POSIX's and dash's): never exported into it, given to the
 * command alone. `PWD` and `OLDPWD` are also `cd`'s to set.
 */
const SHELL_OWN = new Set(
  'PATH PWD OLDPWD IFS CDPATH ENV HOME OPTIND PPID PS1 PS2 PS4 LINENO MAIL MAILCHECK MAILPATH HISTSIZE FCEDIT TERM'.split(
    ' ',
  ),
);

/** One long-lived shell. */
class Shell {
  readonly #child: ChildProcess;
  #call: Call | null = null;
  #dead = false;
  /** What the shell exports: its calls' variables but its own (see ShellPool). */
  readonly #exported = new Map<string, string>();
  /** Calls finished. */
  calls = 0;
  /** The trailer's secret part, for this shell's life; each call adds its count (see ShellPool). */
  readonly #secret = randomBytes(12).toString('hex');

  constructor() {
    this.#child = spawn(DASH ?? 'dash', [], { cwd: '/', env: {}, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.#child.on('error', () => this.#die());
    this.#child.on('close', () => this.#die());
    this.#child.stdin?.on('error', () => undefined); // a dead shell: its 'close' settles the call
    this.#child.stdout?.on('data', (chunk: Buffer) => this.#output(chunk, 'out'));
    this.#child.stderr?.on('data', (chunk: Buffer) => this.#output(chunk, 'err'));
    this.#hold(false);
  }

  /** The lines of one call (see ShellPool), and its nonce; null when a name or value cannot be passed this way. */
  script(file: string, request: SpawnRequest): { text: string; nonce: string; cwd: string } | null {
    const words: string[] = [];
    const changed: [string, string][] = [];
    let kept = 0;
    for (const key in request.env) {
      const value = request.env[key];
      if (value === undefined) continue;
      if (!NAME.test(key) || value.includes('\0')) return null;
      if (SHELL_OWN.has(key)) {
        words.push(`${key}=${singleQuoted(value)}`);
        continue;
      }
      const was = this.#exported.get(key);
      if (was !== undefined) kept++;
      if (was !== value) changed.push([key, value]);
    }
    words.push(singleQuoted(file));
    for (const arg of request.args) {
      if (arg.includes('\0')) return null;
      words.push(singleQuoted(arg));
    }
    let setup = '';
    // exported before and not in this call's environment: every exported name it has was counted
    if (kept < this.#exported.size) {
      const gone = [...this.#exported.keys()].filter((key) => request.env[key] === undefined);
      for (const key of gone) this.#exported.delete(key);
      setup += `unset ${gone.join(' ')}; `;
    }
    for (const [key, value] of changed) {
      setup += `export ${key}=${singleQuoted(value)}; `;
      this.#exported.set(key, value);
    }
    const nonce = `${this.#secret}.${this.calls}:`;
    const text =
      `${setup}if cd -P -- ${singleQuoted(request.cwd)} 2>/dev/null; then unset PWD OLDPWD; ${words.join(' ')} </dev/null; printf '%s%s\\n' ${nonce} "$?"; ` +
      `else printf '%scwd\\n' ${nonce}; fi; printf '%s' ${nonce} >&2\n`;
    return { text, nonce, cwd: request.cwd };
  }

  /** Idle and alive: may take the next call. */
  get usable(): boolean {
    return !this.#dead && this.#call === null;
  }

  run(script: { text: string; nonce: string; cwd: string }, timeoutMs: number): Promise<SpawnResult | 'lost'> {
    return new Promise((resolve) => {
      if (this.#dead) {
        resolve('lost');
        return;
      }
      const timer = setTimeout(() => {
        if (this.#call === null) return;
        this.#call.timedOut = true;
        this.#kill();
      }, timeoutMs);
      this.#call = {
        nonce: script.nonce,
        cwd: script.cwd,
        out: new Output(),
        err: new Output(),
        timedOut: false,
        timer,
        resolve,
      };
      this.#hold(true);
      this.#child.stdin?.write(script.text);
    });
  }

  /** Lets the shell end (its stdin closes). */
  end(): void {
    this.#child.stdin?.end();
  }

  #output(chunk: Buffer, which: 'out' | 'err'): void {
    const call = this.#call;
    if (call === null) {
      this.#dead = true; // written by something the last command left running: see ShellPool
      return;
    }
    call[which].add(chunk);
    const out = call.out.trailer(call.nonce, true);
    if (out === null) return;
    const err = call.err.trailer(call.nonce, false);
    if (err === null) return;
    this.#finish({
      exitCode: out.status === 'cwd' ? null : Number(out.status),
      stdout: call.out.before(out.length),
      stderr: call.err.before(err.length).toString('utf8'),
      timedOut: false,
      ...(out.status === 'cwd' ? { spawnError: `cannot enter the working directory ${call.cwd}` } : {}),
    });
  }

  #finish(result: SpawnResult | 'lost'): void {
    const call = this.#call;
    if (call === null) return;
    clearTimeout(call.timer);
    this.#call = null;
    if (result !== 'lost') this.calls++;
    this.#hold(false);
    call.resolve(result);
  }

  #kill(): void {
    this.#dead = true;
    try {
      if (this.#child.pid !== undefined) process.kill(-this.#child.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }

  #die(): void {
    this.#dead = true;
    const call = this.#call;
    if (call === null) return;
    if (!call.timedOut) {
      this.#finish('lost');
      return;
    }
    this.#finish({
      exitCode: null,
      stdout: call.out.all(),
      stderr: call.err.all().toString('utf8'),
      timedOut: true,
    });
  }

  /** An idle shell never keeps this process alive. */
  #hold(busy: boolean): void {
    const handles = [this.#child, this.#child.stdin, this.#child.stdout, this.#child.stderr] as Array<{
      ref?: () => void;
      unref?: () => void;
    } | null>;
    for (const handle of handles) {
      if (busy) handle?.ref?.();
      else handle?.unref?.();
    }
  }
}

interface Call {
  nonce: string;
  cwd: string;
  out: Output;
  err: Output;
  timedOut: boolean;
  timer: NodeJS.Timeout;
  resolve: (result: SpawnResult | 'lost') => void;
}

/** One output of a call: what came, and its last bytes (where the trailer is looked for). */
class Output {
  readonly chunks: Buffer[] = [];
  bytes = 0;
  #tail: Buffer = Buffer.alloc(0);

  add(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    this.#tail =
      chunk.length >= TRAILER_WINDOW
        ? chunk.subarray(chunk.length - TRAILER_WINDOW)
        : Buffer.concat([this.#tail, chunk]).subarray(-TRAILER_WINDOW);
  }

  /**
   * The call's trailer once it came (it is the last thing the shell writes for the call): its
   * status and length. Stdout's is `<nonce><status>\n`, stderr's `<nonce>`. null while it has not.
   */
  trailer(nonce: string, withStatus: boolean): { status: string; length: number } | null {
    const tail = this.#tail.toString('latin1');
    const at = tail.lastIndexOf(nonce);
    if (at < 0) return null;
    const rest = tail.slice(at + nonce.length);
    const status = withStatus ? /^(\d+|cwd)\n$/.exec(rest)?.[1] : rest === '' ? '' : undefined;
    return status === undefined ? null : { status, length: tail.length - at };
  }

  /** What came before a trailer of `length` bytes (one copy of the output, made once). */
  before(length: number): Buffer {
    return this.all().subarray(0, this.bytes - length);
  }

  all(): Buffer {
    return Buffer.concat(this.chunks, this.bytes);
  }
}

/** Bytes at the end of an output searched for its trailer (a nonce, a status and a newline). */
const TRAILER_WINDOW = 64;
