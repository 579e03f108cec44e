import { wrapWithSandbox, type SandboxCommand, type SandboxedCommand, type SandboxPolicy } from './bwrap.js';
import { describeHostNetworkRefusal } from './network.js';
import { probeSandbox } from './probe.js';

/** A command that runs as it is, outside any sandbox (`sandbox: off`, or `auto` where bwrap does not work). */
export interface UnsandboxedCommand {
  /** The command itself: `/bin/sh -c <shellCommand>`, or `argv`. */
  argv: string[];
  sandboxed: false;
  /** Outside the sandbox a run has the host's network (gaffer's API included). */
  network: 'host';
}

/** A command that must not run at all (config `sandbox: required` and the sandbox cannot give what it promises). */
export interface RefusedCommand {
  /** Why, in words a refusal row shows (the fix included). */
  refused: string;
  sandboxed: false;
  network: 'host';
}

/** What the sandbox makes of one command: wrapped, run as it is, or refused with why. */
export type SandboxResult = SandboxedCommand | UnsandboxedCommand | RefusedCommand;

/**
 * The one sandbox seam (issue 12): built once from config `sandbox` at the composition root and
 * handed to every runner, the verification and the baseline, so the policy (spec 04) is applied
 * in one place and every row's `sandboxed`/`network` comes from the same answer.
 */
export interface Sandbox {
  /** The policy it was made from. */
  readonly policy: SandboxPolicy;
  /** True when a run would be wrapped: the policy is not `off` and bubblewrap works here. */
  readonly works: boolean;
  /** The command wrapped under the policy: sandboxed, unsandboxed (`auto` without bwrap, `off`), or refused (`required`). */
  wrap(cmd: SandboxCommand): SandboxResult;
}

/** The sandbox for a policy: bubblewrap for `auto` and `required`, none for `off`. */
export function createSandbox(policy: SandboxPolicy): Sandbox {
  return policy === 'off' ? NO_SANDBOX : new BwrapSandbox(policy);
}

/** Whether a result must not run (narrows to the refusal). */
export function isRefused(result: SandboxResult): result is RefusedCommand {
  return 'refused' in result;
}

/** An argv that fails saying `refused: <why>` (exit 126): a refusal where a command is expected (the builtin's `run_command`). */
export function buildRefusalArgv(why: string): string[] {
  return ['/bin/sh', '-c', 'printf "%s\\n" "$1" >&2; exit 126', 'sh', `refused: ${why}`];
}

class BwrapSandbox implements Sandbox {
  readonly policy: SandboxPolicy;

  constructor(policy: 'auto' | 'required') {
    this.policy = policy;
  }

  get works(): boolean {
    return probeSandbox().available;
  }

  wrap(cmd: SandboxCommand): SandboxResult {
    const wrapped = wrapWithSandbox(cmd);
    const required = this.policy === 'required';
    // spec 04: `required` promises no route to the host's network; bwrap without slirp4netns cannot keep it for `outbound`
    if (wrapped !== null && wrapped.network === 'host' && required) return refusal(describeHostNetworkRefusal());
    // issue 32: `required` also promises no unix socket of the host; without the filter (another architecture, no seccomp) it cannot keep that
    if (wrapped !== null && wrapped.network !== 'host' && wrapped.unixSocketFilter !== true && required) {
      return refusal(
        `the sandbox is required (config sandbox: required) but cannot keep host unix sockets out here: ${probeSandbox().unixSocketFilterReason} — run \`gaffer doctor\`, or use sandbox: auto`,
      );
    }
    if (wrapped !== null) return wrapped;
    if (required)
      return refusal(
        `the sandbox is required (config sandbox: required) but does not work here: ${probeSandbox().reason}`,
      );
    return unsandboxed(cmd);
  }
}

/** `sandbox: off`: every command runs as it is. */
const NO_SANDBOX: Sandbox = {
  policy: 'off',
  works: false,
  wrap: unsandboxed,
};

function unsandboxed(cmd: SandboxCommand): UnsandboxedCommand {
  return {
    argv: cmd.shellCommand !== undefined ? ['/bin/sh', '-c', cmd.shellCommand] : (cmd.argv ?? []),
    sandboxed: false,
    network: 'host',
  };
}

function refusal(why: string): RefusedCommand {
  return { refused: why, sandboxed: false, network: 'host' };
}
