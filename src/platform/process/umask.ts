/**
 * gaffer's own files are private: the CLI starts with umask 077, so everything it and its git
 * children create (the db, logs, instruction files, shadow repositories, server.json) is 0600/0700
 * without a mode at every call site. Workers and the verification do the user's work in the
 * user's workspace and must create files with the user's own mode: they are started with the
 * umask gaffer was started with (run-process.ts), and so are the builtin agent's file writes.
 */

let userMask: number | null = null;

/** Sets the process umask to 077, remembering the user's for workers. Call once, at start. */
export function restrictUmask(): void {
  const previous = process.umask(0o077);
  userMask ??= previous;
}

/** The umask the user started gaffer with, when gaffer changed it; null when it never did. */
export function userUmask(): number | null {
  return userMask;
}

/**
 * A command that runs `file args` under the user's umask: `/bin/sh -c 'umask 022; exec "$0" "$@"'`.
 * A process cannot be given a umask from outside, and setting ours around `spawn` would let a
 * file gaffer creates meanwhile (on libuv's threads) take the looser mode.
 */
export function underUserUmask(command: { file: string; args: string[] }): { file: string; args: string[] } {
  if (userMask === null) return command;
  return {
    file: '/bin/sh',
    args: ['-c', `umask ${userMask.toString(8).padStart(4, '0')} && exec "$0" "$@"`, command.file, ...command.args],
  };
}

/** Runs a synchronous file write of the user's work (in the workspace) under the user's umask. */
export function asUser<T>(write: () => T): T {
  if (userMask === null) return write();
  const ours = process.umask(userMask);
  try {
    return write();
  } finally {
    process.umask(ours);
  }
}
