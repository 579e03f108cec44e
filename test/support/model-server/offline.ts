// Running a program where nothing can leave the machine: a loopback-only network namespace whose 127.0.0.1:<port>
// is bridged to the model server's unix socket (a pathname socket crosses network namespaces; TCP does not).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The bridge script that runs inside the namespace. */
export const OFFLINE_RUN = fileURLToPath(new URL('./offline-run.mjs', import.meta.url));

/** The port the bridge listens on inside the namespace unless told otherwise (a fresh namespace has every port free). */
export const OFFLINE_PORT = 8080;

/** A command line: the file to spawn and its arguments. */
export interface CommandLine {
  file: string;
  args: string[];
}

function unshareFlags(): string[] {
  // root can make a network namespace directly; anyone else needs a user namespace for it
  return process.getuid?.() === 0 ? ['-n'] : ['-r', '-n'];
}

/** The command line that runs `command` offline, with `http://127.0.0.1:<port>` reaching the server on `socketPath`. */
export function offlineCommand(socketPath: string, command: readonly string[], port = OFFLINE_PORT): CommandLine {
  return {
    file: 'unshare',
    args: [
      ...unshareFlags(),
      '--',
      process.execPath,
      OFFLINE_RUN,
      '--socket',
      socketPath,
      '--port',
      String(port),
      '--',
      ...command,
    ],
  };
}

/** The base URL a program inside the namespace uses. */
export function offlineUrl(port = OFFLINE_PORT): string {
  return `http://127.0.0.1:${port}`;
}

/** Whether loopback-only namespaces work here; when not, why (for a skip message). */
export function offlineSupport(): { ok: true } | { ok: false; reason: string } {
  const probe = spawnSync('unshare', [...unshareFlags(), '--', 'ip', 'link', 'set', 'lo', 'up'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (probe.error) return { ok: false, reason: `unshare is unavailable: ${probe.error.message}` };
  if (probe.status !== 0)
    return {
      ok: false,
      reason: `cannot make a loopback-only network namespace: ${probe.stderr.trim() || `unshare exited ${probe.status}`}`,
    };
  return { ok: true };
}
