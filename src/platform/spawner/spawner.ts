import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { ShellPool } from './shell-pool.js';
import type { SpawnRequest, SpawnResult } from './spawn-request.js';

export type { SpawnRequest, SpawnResult } from './spawn-request.js';

interface Pending {
  request: SpawnRequest;
  resolve: (result: SpawnResult) => void;
  inputError?: Error;
  /** Its stdout as far as it came here: the helper's part, then what its handed-over pipe gave. */
  parts: Buffer[];
  /** The stdout pipe the helper handed over (a large output), read here to its close. */
  pipe: Socket | null;
  pipeClosed: boolean;
  /** The helper's answer, kept while the handed-over pipe is still being read. */
  done: DoneMessage | null;
}

interface DoneMessage {
  t: 'done';
  id: number;
  exitCode: number | null;
  stdout: Uint8Array;
  stderr: string;
  timedOut: boolean;
  spawnError?: string;
  /** Its stdout went on through a handed-over pipe (after `part` and `pipe` messages). */
  piped?: true;
}

/** A large call output on its way (spawner-child.cjs): what the helper read, then the pipe itself. */
type CallMessage = { t: 'part'; id: number; chunk: Uint8Array } | { t: 'pipe'; id: number };

/** What the helper says about a streamed process (spawner-child.cjs). */
type StreamMessage =
  | { t: 'spawned'; id: number; pid: number; startTicks: number | null }
  | { t: 'failed'; id: number; message: string }
  | { t: 'out'; id: number; fd: 1 | 2; chunk: Uint8Array }
  | { t: 'exit'; id: number; code: number | null; signal: string | null }
  | { t: 'closed'; id: number }
  | { t: 'handover'; id: number; fd: 1 | 2 };

/** A process to start through the helper as the leader of a group of its own, stdin /dev/null, its output streamed back. */
export interface StreamRequest {
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** What happens to a streamed process, as the helper reports it, in this order. */
export interface StreamHandlers {
  /** It runs: its pid (= its group id) and its start time (clock ticks since boot, /proc), read before it could be reaped. */
  onSpawn(pid: number, startTicks: number | null): void;
  /** It could not be started (instead of onSpawn). */
  onFail(message: string): void;
  onData(fd: 1 | 2, chunk: Buffer): void;
  onExit(code: number | null, signal: string | null): void;
  /** Its pipes closed: every holder of them is gone. */
  onClose(): void;
  /**
   * The helper died first: `started`, after onSpawn (the group lives on, its exit unseen). Nothing
   * else follows unless `pipesHere`: the helper had handed the pipes over, and they are read here
   * to their close (onData, onClose).
   */
  onLost(started: boolean, pipesHere: boolean): void;
}

/** A streamed process in the helper. */
export interface StreamedProcess {
  /** Stops waiting for its pipes (the helper lets them go): nothing more is reported. */
  drop(): void;
}

/** A streamed process as followed here. */
interface Stream {
  handlers: StreamHandlers;
  started: boolean;
  /** Its exit was reported. */
  exited: boolean;
  /** The pipes the helper handed over (spawner-child.cjs: once the worker printed a lot), read here. */
  pipes: Socket[];
  /** Of those, the ones closed. */
  pipesClosed: number;
}

const CHILD_SCRIPT = fileURLToPath(new URL('./spawner-child.cjs', import.meta.url));

/**
 * Starts commands through a small helper process (spawner-child.cjs) instead of forking this one.
 * `fork()` copies the forking process's page tables while its event loop waits: 1 ms at 50 MB,
 * 5 ms at 250 MB — for a server running a dozen git calls per job, the main thread's biggest
 * cost. The helper is started on first use, kept while in use, and never keeps this process
 * alive when idle. If it dies, the calls it held are run again here (or fail when their input
 * was a stream already consumed).
 */
class Spawner {
  #child: ChildProcess | null = null;
  readonly #pending = new Map<number, Pending>();
  readonly #streams = new Map<number, Stream>();
  #nextId = 1;
  #isClosing = false;
  /** The environment the helper holds: the last request's (see #envChange). */
  #helperEnv = new Map<string, string>();

  run(request: SpawnRequest): Promise<SpawnResult> {
    return new Promise((resolve) => {
      const id = this.#nextId++;
      const pending: Pending = { request, resolve, parts: [], pipe: null, pipeClosed: false, done: null };
      const child = this.#ensureChild();
      this.#pending.set(id, pending);
      this.#hold(child);
      const streamed = typeof request.input !== 'string' && !Buffer.isBuffer(request.input);
      const { cmd, args, cwd, timeoutMs } = request;
      this.#send(child, {
        t: 'run',
        id,
        cmd,
        args,
        cwd,
        ...this.#envChange(request.env),
        timeoutMs,
        streamed,
        ...(streamed ? {} : { input: request.input }),
      });
      if (streamed) void this.#stream(child, id, pending, request.input as AsyncIterable<string>);
    });
  }

  /** Starts a streamed process (a worker) in the helper. */
  start(request: StreamRequest, handlers: StreamHandlers): StreamedProcess {
    const id = this.#nextId++;
    const child = this.#ensureChild();
    const stream: Stream = { handlers, started: false, exited: false, pipes: [], pipesClosed: 0 };
    this.#streams.set(id, stream);
    this.#hold(child);
    const { file, args, cwd } = request;
    this.#send(child, { t: 'start', id, file, args, cwd, ...this.#envChange(request.env) });
    return {
      drop: () => {
        if (!this.#streams.has(id)) return;
        for (const pipe of stream.pipes) pipe.destroy();
        // pipes still in the helper (or on their way here: destroyed as they arrive) are let go there
        this.#send(child, { t: 'drop', id });
        this.#streams.delete(id);
        this.#releaseIfIdle();
      },
    };
  }

  /**
   * Stops the helper (calls in flight are run again here); with streamed processes still running,
   * once the last of them ended (they stay followed to their end, as children of this process would).
   */
  close(): void {
    this.#isClosing = true;
    if (this.#streams.size > 0) return;
    const child = this.#child;
    if (child === null) return;
    this.#child = null;
    child.disconnect();
  }

  /** Feeds a streamed input; the iterable is always run to its end (its producer records what it produced). */
  async #stream(child: ChildProcess, id: number, pending: Pending, input: AsyncIterable<string>): Promise<void> {
    try {
      for await (const chunk of input) this.#send(child, { t: 'in', id, chunk });
      this.#send(child, { t: 'end', id });
    } catch (error) {
      pending.inputError = error instanceof Error ? error : new Error(String(error));
      this.#send(child, { t: 'kill', id });
    }
  }

  /**
   * A request's environment as the change from the last one sent: the helper keeps the last and
   * applies the change (spawner-child.cjs). A git call's environment is ~110 variables, nearly all
   * the same from call to call; the change is a few, and a message that serializes a few.
   */
  #envChange(env: NodeJS.ProcessEnv): { envSet: Record<string, string>; envUnset: string[] } {
    const held = this.#helperEnv;
    const envSet: Record<string, string> = {};
    const envUnset: string[] = [];
    let seen = 0;
    for (const key in env) {
      const value = env[key];
      if (value === undefined) continue;
      seen++;
      if (held.get(key) !== value) {
        envSet[key] = value;
        held.set(key, value);
      }
    }
    if (seen !== held.size) {
      for (const key of held.keys()) {
        if (env[key] === undefined) {
          envUnset.push(key);
          held.delete(key);
        }
      }
    }
    return { envSet, envUnset };
  }

  #send(child: ChildProcess, message: object): void {
    // a helper that died drops the message (the callback keeps that from being an 'error'
    // event); its 'exit' handler settles the calls it held
    if (child.connected) child.send(message, () => undefined);
  }

  #ensureChild(): ChildProcess {
    if (this.#child !== null) return this.#child;
    this.#helperEnv = new Map(); // a new helper holds no environment yet
    const env = { ...process.env };
    delete env.NODE_OPTIONS; // the helper stays small: no loaders, profilers or inspectors of ours
    const child = spawn(process.execPath, [CHILD_SCRIPT], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'advanced',
      env,
    });
    child.unref();
    child.on('message', (message: DoneMessage | CallMessage | StreamMessage, pipe?: Socket) => {
      if (message.t === 'done') this.#done(message);
      else if (message.t === 'part' || message.t === 'pipe') this.#callOutput(message, pipe);
      else this.#streamed(message, pipe);
    });
    child.on('exit', () => this.#lost(child));
    child.on('error', () => this.#lost(child));
    this.#child = child;
    return child;
  }

  #done(message: DoneMessage): void {
    const pending = this.#pending.get(message.id);
    if (pending === undefined) return;
    pending.done = message;
    if (message.piped === true && !pending.pipeClosed) return; // the pipe's close answers
    this.#answer(message.id, pending, message);
  }

  /** A large output: the helper's part is kept, its pipe read here; once it closed after the helper's answer, the call is answered. */
  #callOutput(message: CallMessage, pipe: Socket | undefined): void {
    const pending = this.#pending.get(message.id);
    if (pending === undefined) {
      pipe?.destroy();
      return;
    }
    if (message.t === 'part') {
      pending.parts.push(Buffer.from(message.chunk.buffer, message.chunk.byteOffset, message.chunk.byteLength));
      return;
    }
    if (pipe === undefined) return;
    pending.pipe = pipe;
    pipe.on('data', (chunk: Buffer) => pending.parts.push(chunk));
    pipe.on('error', () => undefined); // a read error ends the pipe: its close follows
    pipe.once('close', () => {
      pending.pipeClosed = true;
      if (pending.done !== null && this.#pending.get(message.id) === pending)
        this.#answer(message.id, pending, pending.done);
    });
  }

  #answer(id: number, pending: Pending, message: DoneMessage): void {
    this.#pending.delete(id);
    this.#releaseIfIdle();
    const last = Buffer.from(message.stdout.buffer, message.stdout.byteOffset, message.stdout.byteLength);
    const result: SpawnResult = {
      exitCode: message.exitCode,
      stdout: pending.parts.length === 0 ? last : Buffer.concat([...pending.parts, last]),
      stderr: message.stderr,
      timedOut: message.timedOut,
    };
    if (message.spawnError !== undefined) result.spawnError = message.spawnError;
    if (pending.inputError !== undefined) result.inputError = pending.inputError;
    pending.resolve(result);
  }

  #streamed(message: StreamMessage, pipe: Socket | undefined): void {
    const stream = this.#streams.get(message.id);
    if (stream === undefined) {
      pipe?.destroy(); // handed over after a drop
      return;
    }
    const { handlers } = stream;
    if (message.t === 'out')
      handlers.onData(
        message.fd,
        Buffer.from(message.chunk.buffer, message.chunk.byteOffset, message.chunk.byteLength),
      );
    else if (message.t === 'spawned') {
      stream.started = true;
      handlers.onSpawn(message.pid, message.startTicks);
    } else if (message.t === 'exit') {
      stream.exited = true;
      handlers.onExit(message.code, message.signal);
      if (stream.pipesClosed === 2) this.#end(message.id);
    } else if (message.t === 'handover') {
      if (pipe !== undefined) this.#read(message.id, stream, message.fd, pipe);
    } else {
      this.#end(message.id);
      if (message.t === 'failed') handlers.onFail(message.message);
      else handlers.onClose();
    }
  }

  /** Reads a pipe the helper handed over, as node reads a child's own; once both closed, the stream's end is told. */
  #read(id: number, stream: Stream, fd: 1 | 2, pipe: Socket): void {
    stream.pipes.push(pipe);
    pipe.on('data', (chunk: Buffer) => stream.handlers.onData(fd, chunk));
    pipe.on('error', () => undefined); // a read error ends the pipe: its close follows
    pipe.once('close', () => {
      if (++stream.pipesClosed < 2) return;
      stream.handlers.onClose();
      if (stream.exited) this.#end(id);
    });
  }

  /** Nothing more is coming from the helper for a stream. */
  #end(id: number): void {
    if (!this.#streams.delete(id)) return;
    this.#releaseIfIdle();
  }

  /** The channel keeps this process alive while the helper works for it (as a child of its own would). */
  #hold(child: ChildProcess): void {
    child.channel?.ref();
  }

  #releaseIfIdle(): void {
    if (this.#pending.size > 0 || this.#streams.size > 0) return;
    if (this.#isClosing) this.close();
    else this.#child?.channel?.unref();
  }

  /**
   * The helper is gone: calls it held run again here, unless their input stream was consumed;
   * streamed processes are told (their groups, orphaned, are their owners' to stop).
   */
  #lost(child: ChildProcess): void {
    if (this.#child === child) this.#child = null;
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    for (const { handlers, started, pipes } of streams) handlers.onLost(started, pipes.length > 0);
    const held = [...this.#pending.values()];
    this.#pending.clear();
    for (const pending of held) {
      pending.pipe?.destroy(); // run again from the start: what came through it is dropped
      const { input } = pending.request;
      if (typeof input === 'string' || Buffer.isBuffer(input)) void spawnHere(pending.request).then(pending.resolve);
      else
        pending.resolve({
          exitCode: null,
          stdout: Buffer.alloc(0),
          stderr: '',
          timedOut: false,
          spawnError: 'the spawner helper process exited',
        });
    }
  }
}

let spawner: Spawner | null = null;
/** Calls without input run in kept shells while the helper is in use (shell-pool.ts). */
let shells: ShellPool | null = null;
let users = 0;

/**
 * Routes this process's git calls and workers through the spawner helper until the returned function is
 * called (counted: the helper stops when its last user releases it). A long-lived engine uses it;
 * one-shot commands and library calls spawn directly.
 */
export function useSpawner(): () => void {
  users++;
  spawner ??= new Spawner();
  shells ??= new ShellPool();
  let released = false;
  return () => {
    if (released) return;
    released = true;
    users--;
    if (users === 0) {
      spawner?.close();
      spawner = null;
      shells?.close();
      shells = null;
    }
  };
}

/** Starts a streamed process through the helper when one is in use; null when none is (the caller spawns it itself). */
export function startStreamed(request: StreamRequest, handlers: StreamHandlers): StreamedProcess | null {
  return spawner !== null ? spawner.start(request, handlers) : null;
}

/**
 * Runs a command: in a kept shell while the helper is in use and the call may run there
 * (shell-pool.ts), else through the helper, else here.
 */
export function spawnCommand(request: SpawnRequest): Promise<SpawnResult> {
  return shells?.run(request, viaHelper) ?? viaHelper(request);
}

/** Runs a command through the helper when one is in use, else here (never in a kept shell). */
function viaHelper(request: SpawnRequest): Promise<SpawnResult> {
  return spawner !== null ? spawner.run(request) : spawnHere(request);
}

/** Runs a command from this process: pipes, kill on timeout. */
export function spawnHere(request: SpawnRequest): Promise<SpawnResult> {
  return new Promise((resolve) => {
    const child = spawn(request.cmd, request.args, {
      cwd: request.cwd,
      env: request.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    let settled = false;
    let inputError: Error | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, request.timeoutMs);
    const finish = (result: SpawnResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (inputError !== undefined) result.inputError = inputError;
      resolve(result);
    };
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', (error) =>
      finish({ exitCode: null, stdout: Buffer.alloc(0), stderr: '', timedOut, spawnError: error.message }),
    );
    child.on('close', (code) =>
      finish({ exitCode: code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8'), timedOut }),
    );
    // the command may exit before reading all of stdin (e.g. a fatal error): EPIPE is not our failure
    child.stdin.on('error', () => undefined);
    const { input } = request;
    if (typeof input === 'string' || Buffer.isBuffer(input)) child.stdin.end(input);
    else {
      streamInput(child.stdin, input).catch((error: unknown) => {
        inputError = error instanceof Error ? error : new Error(String(error));
        child.kill('SIGKILL');
      });
    }
  });
}

/**
 * Writes an async iterable to a child's stdin with backpressure. The iterable is always run to
 * its end, even once the child stopped reading: its producer may record what it produced.
 */
async function streamInput(stdin: Writable, input: AsyncIterable<string>): Promise<void> {
  let open = true;
  stdin.once('error', () => {
    open = false;
  });
  stdin.once('close', () => {
    open = false;
  });
  for await (const chunk of input) {
    if (open && !stdin.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          stdin.off('drain', done);
          stdin.off('close', done);
          resolve();
        };
        stdin.on('drain', done);
        stdin.on('close', done);
      });
    }
  }
  if (open) stdin.end();
}
