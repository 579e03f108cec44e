import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The unix-socket filter (issue 32): a classic-BPF seccomp program bwrap loads (`--seccomp FD`)
 * before it starts a sandboxed command. A run with a network namespace of its own still shares
 * the host's filesystem, and connect() to a socket inode works through a read-only bind (a
 * redis socket under /var/tmp, docker.sock, the session bus, an ssh-agent under /run). So the
 * filter takes away what reaches one: no `socket(AF_UNIX, …)` at all, no `socketpair(AF_UNIX,
 * SOCK_DGRAM)` (a datagram socket can be connected anew or sendto() any path), no io_uring (its
 * IORING_OP_SOCKET/CONNECT create and connect sockets without these syscalls), no x32 ABI (its
 * own syscall numbers), and for the 32-bit ABI of the same machine its own numbers and
 * `socketcall`. Stream and seqpacket socketpairs stay: libuv's pipes, node's IPC, python's
 * multiprocessing use them, and an already connected pair cannot connect elsewhere.
 *
 * What it costs honest tooling, in `none` and `outbound` runs: nothing inside can listen on or
 * connect to a unix socket, a path or an abstract one (a test suite that starts a server on a
 * unix socket, python's multiprocessing.Manager, a local postgres or X server; they fail with
 * EAFNOSUPPORT, as on a kernel without AF_UNIX; glibc's nscd lookups fall back to the files), and
 * io_uring is ENOSYS (libuv and liburing users fall back to threads).
 */

/** Where the filter's syscalls sit on one ABI. */
interface Abi {
  /** AUDIT_ARCH_* as seccomp_data.arch reports it. */
  arch: number;
  socket: number;
  socketpair: number;
  ioUringSetup: number;
  /** The 32-bit x86 multiplexer (its call number in args[0]; args[1] points at the real arguments). */
  socketcall?: number;
  /** x86_64: numbers at or above this are the x32 ABI. */
  x32Bit?: number;
}

const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_I386 = 0x40000003;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
const AUDIT_ARCH_ARM = 0x40000028;

/** The native ABI first, then the 32-bit one its kernel also runs; keyed by node's `process.arch`. */
const ABIS: Record<string, readonly Abi[]> = {
  x64: [
    { arch: AUDIT_ARCH_X86_64, socket: 41, socketpair: 53, ioUringSetup: 425, x32Bit: 0x40000000 },
    { arch: AUDIT_ARCH_I386, socket: 359, socketpair: 360, ioUringSetup: 425, socketcall: 102 },
  ],
  arm64: [
    { arch: AUDIT_ARCH_AARCH64, socket: 198, socketpair: 199, ioUringSetup: 425 },
    { arch: AUDIT_ARCH_ARM, socket: 281, socketpair: 288, ioUringSetup: 425 },
  ],
};

const AF_UNIX = 1;
const SOCK_STREAM = 1;
const SOCK_SEQPACKET = 5;
/** The kernel's SOCK_TYPE_MASK: the type without SOCK_NONBLOCK/SOCK_CLOEXEC. */
const SOCK_TYPE_MASK = 0xf;
const SYS_SOCKET = 1;
const SYS_SOCKETPAIR = 8;
const EAFNOSUPPORT = 97;
const ENOSYS = 38;

const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const retErrno = (errno: number): number => 0x00050000 | errno;

// classic BPF opcodes (linux/filter.h)
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const AND_K = 0x54;
const RET_K = 0x06;

/** struct seccomp_data: nr, arch, then (after the instruction pointer) the six u64 arguments; the low 32 bits of each on little-endian. */
const NR = 0;
const ARCH = 4;
const argLow = (i: number): number => 16 + 8 * i;

type Label = string;
type Op = { label: Label } | { code: number; k: number } | { code: number; k: number; jt: Label | 0; jf: Label | 0 };

/** Resolves labels to the relative jumps classic BPF takes and encodes `struct sock_filter` (u16 code, u8 jt, u8 jf, u32 k). */
function assemble(ops: Op[]): Buffer {
  const at = new Map<Label, number>();
  const code: Exclude<Op, { label: Label }>[] = [];
  for (const op of ops) {
    if ('label' in op) at.set(op.label, code.length);
    else code.push(op);
  }
  const out = Buffer.alloc(code.length * 8);
  code.forEach((op, i) => {
    const offset = (target: Label | 0): number => {
      if (target === 0) return 0;
      const to = at.get(target);
      if (to === undefined || to <= i || to - i - 1 > 255)
        throw new Error(`seccomp filter: jump to ${target} from ${i} cannot be encoded`);
      return to - i - 1;
    };
    out.writeUInt16LE(op.code, i * 8);
    out.writeUInt8('jt' in op ? offset(op.jt) : 0, i * 8 + 2);
    out.writeUInt8('jt' in op ? offset(op.jf) : 0, i * 8 + 3);
    out.writeUInt32LE(op.k >>> 0, i * 8 + 4);
  });
  return out;
}

function abiBlock(abi: Abi, n: number): Op[] {
  const p = `abi${n}`;
  const ops: Op[] = [{ label: p }, { code: LD_W_ABS, k: NR }];
  if (abi.x32Bit !== undefined) ops.push({ code: JGE_K, k: abi.x32Bit, jt: 'nosys', jf: 0 });
  ops.push(
    { code: JEQ_K, k: abi.socket, jt: `${p}-socket`, jf: 0 },
    { code: JEQ_K, k: abi.socketpair, jt: `${p}-pair`, jf: 0 },
    { code: JEQ_K, k: abi.ioUringSetup, jt: 'nosys', jf: 0 },
  );
  if (abi.socketcall !== undefined) ops.push({ code: JEQ_K, k: abi.socketcall, jt: `${p}-socketcall`, jf: 0 });
  ops.push(
    { code: RET_K, k: RET_ALLOW },
    { label: `${p}-socket` },
    { code: LD_W_ABS, k: argLow(0) },
    { code: JEQ_K, k: AF_UNIX, jt: 'refuse', jf: 'allow' },
    { label: `${p}-pair` },
    { code: LD_W_ABS, k: argLow(0) },
    { code: JEQ_K, k: AF_UNIX, jt: 0, jf: 'allow' },
    { code: LD_W_ABS, k: argLow(1) },
    { code: AND_K, k: SOCK_TYPE_MASK },
    { code: JEQ_K, k: SOCK_STREAM, jt: 'allow', jf: 0 },
    { code: JEQ_K, k: SOCK_SEQPACKET, jt: 'allow', jf: 'refuse' },
  );
  if (abi.socketcall !== undefined) {
    // its arguments sit behind a pointer the filter cannot read: no socket()/socketpair() through it at all
    ops.push(
      { label: `${p}-socketcall` },
      { code: LD_W_ABS, k: argLow(0) },
      { code: JEQ_K, k: SYS_SOCKET, jt: 'refuse', jf: 0 },
      { code: JEQ_K, k: SYS_SOCKETPAIR, jt: 'refuse', jf: 'allow' },
    );
  }
  return ops;
}

/** The filter for a machine (node's `process.arch`); null where gaffer has no syscall table for it. */
export function buildUnixSocketFilter(arch: string = process.arch): Buffer | null {
  const abis = ABIS[arch];
  if (abis === undefined) return null;
  const ops: Op[] = [{ code: LD_W_ABS, k: ARCH }];
  abis.forEach((abi, n) => ops.push({ code: JEQ_K, k: abi.arch, jt: `abi${n}`, jf: 0 }));
  // a syscall of an ABI the filter does not know (its numbers mean other calls) ends the process
  ops.push({ code: RET_K, k: RET_KILL_PROCESS });
  abis.forEach((abi, n) => ops.push(...abiBlock(abi, n)));
  ops.push(
    { label: 'allow' },
    { code: RET_K, k: RET_ALLOW },
    { label: 'refuse' },
    { code: RET_K, k: retErrno(EAFNOSUPPORT) },
    { label: 'nosys' },
    { code: RET_K, k: retErrno(ENOSYS) },
  );
  return assemble(ops);
}

/** The fd the wrapper opens the filter file on for bwrap's `--seccomp` (above net-run.cjs's 3–5). */
export const FILTER_FD = 9;

let filterFile: { path: string; bytes: Buffer } | null = null;

/**
 * A file holding this machine's filter, written again if something removed or changed it (a tmp
 * cleaner under a long `gaffer serve`); null where there is no filter for this machine. It lives
 * in `TMPDIR/gaffer-seccomp-<uid>` (0700, owned by this user, shared by this user's gaffer
 * processes: one file per filter, none left per process), or where that folder is not ours, in a
 * folder of this process's own removed at exit.
 */
export function unixSocketFilterFile(): string | null {
  const bytes = filterFile?.bytes ?? buildUnixSocketFilter();
  if (bytes === null) return null;
  if (filterFile !== null && holds(filterFile.path, bytes)) return filterFile.path;
  const name = `unix-sockets-${createHash('sha256').update(bytes).digest('hex').slice(0, 12)}.bpf`;
  const dir = ownSharedDir() ?? ownProcessDir();
  const path = join(dir, name);
  if (!holds(path, bytes)) {
    // written aside and renamed over: another gaffer process never opens half a filter
    const aside = join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}`);
    writeFileSync(aside, bytes, { mode: 0o600, flag: 'wx' });
    renameSync(aside, path);
  }
  filterFile = { path, bytes };
  return path;
}

/** `TMPDIR/gaffer-seccomp-<uid>`, made 0700; null when it is not a directory of this user's that only it can write. */
function ownSharedDir(): string | null {
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  const dir = join(tmpdir(), `gaffer-seccomp-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return null;
  }
  try {
    const st = lstatSync(dir);
    // someone else's folder (or a link) in a shared /tmp could hand bwrap a filter that allows everything
    return st.isDirectory() && st.uid === uid && (st.mode & 0o077) === 0 ? dir : null;
  } catch {
    return null;
  }
}

let processDir: string | null = null;

function ownProcessDir(): string {
  if (processDir !== null && existsSync(processDir)) return processDir;
  const dir = mkdtempSync(join(tmpdir(), 'gaffer-seccomp-'));
  if (processDir === null) process.once('exit', () => rmSync(processDir ?? dir, { recursive: true, force: true }));
  processDir = dir;
  return dir;
}

function holds(path: string, bytes: Buffer): boolean {
  try {
    return readFileSync(path).equals(bytes);
  } catch {
    return false;
  }
}

/**
 * A bwrap argv (that already has `--seccomp FILTER_FD` among its options) behind `/bin/sh`, which
 * opens the filter file on that fd and execs bwrap in its place: the argv stays one a launcher
 * can start as it is (the spawner helper, spawnSync), and the pid stays bwrap's. A missing file
 * fails the run before bwrap starts: it never runs unfiltered.
 */
export function withFilterFd(bwrapArgv: string[], file: string): string[] {
  return ['/bin/sh', '-c', `exec ${FILTER_FD}<"$0" || exit 125; exec "$@"`, file, ...bwrapArgv];
}
