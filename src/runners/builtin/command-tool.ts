import { describeLimitHit } from '../../platform/process/limits.js';
import { runProcess } from '../../platform/process/run-process.js';
import { NO_NETWORK } from '../../platform/sandbox/network.js';
import { buildRefusalArgv, isRefused } from '../../platform/sandbox/sandbox.js';
import { formatSeconds } from '../states.js';
import { checkCommand } from './guard.js';
import { failed, refused, type ToolContext, type ToolOutcome } from './tool-context.js';

/** `run_command` defaults: 120 s, the newest 16 KiB of output kept for the model. */
export const COMMAND_TIMEOUT_MS = 120_000;
export const COMMAND_OUTPUT_BYTES = 16 * 1024;

/**
 * `run_command`: one shell command line in the workspace, through the command guard first
 * (spec 04), then `sh -c` in its own process group with a hard time limit, the worker's
 * cancel, and a bounded output tail.
 */
export async function runCommandTool(
  ctx: ToolContext,
  args: { command: string; timeout_s?: number | undefined },
): Promise<ToolOutcome> {
  const command = args.command;
  if (command.trim() === '') return failed('the command is empty');
  const verdict = checkCommand(command, ctx.guard, ctx.env);
  if (!verdict.ok) return refused(verdict.why);
  const timeoutMs = Math.min(
    ctx.commandTimeoutMs,
    args.timeout_s !== undefined && args.timeout_s > 0 ? args.timeout_s * 1000 : ctx.commandTimeoutMs,
  );
  const wrapped =
    ctx.sandbox?.wrap({ shellCommand: command, workspace: ctx.root, network: ctx.network ?? NO_NETWORK }) ?? null;
  ctx.onCommandSandboxed?.(wrapped?.sandboxed ?? false);
  const result = await runProcess({
    // a refusal (sandbox: required) becomes a command that fails saying why: the model reads it
    ...(wrapped === null
      ? { shellCommand: command }
      : { argv: isRefused(wrapped) ? buildRefusalArgv(wrapped.refused) : wrapped.argv }),
    cwd: ctx.root,
    env: ctx.env,
    timeoutMs,
    signal: ctx.signal,
    graceMs: 2000,
    tailBytes: ctx.commandOutputBytes,
    ...(ctx.onCommandOutput !== undefined ? { onOutput: ctx.onCommandOutput } : {}),
    ...(ctx.onSpawn !== undefined ? { onSpawn: ctx.onSpawn } : {}),
  });
  const dropped =
    result.outputBytes > ctx.commandOutputBytes
      ? `[… first ${result.outputBytes - Buffer.byteLength(result.tail)} bytes of output not shown]\n`
      : '';
  const output = result.tail === '' ? '(no output)' : `${dropped}${result.tail}`;
  if (result.cause !== null) return failed(`could not run the command: ${result.cause}`);
  if (result.isCancelled) return failed('the command was stopped (the worker is being stopped)');
  if (result.limitHit !== null)
    return failed(`the command was ${describeLimitHit(result.limitHit, result.limits)} and killed\n${output}`);
  if (result.timedOut)
    return failed(`the command ran longer than ${formatSeconds(timeoutMs)} and was killed\n${output}`);
  if (result.signal !== null) return failed(`the command was killed by ${result.signal}\n${output}`);
  if (result.exitCode !== 0) return failed(`exit code ${result.exitCode ?? 'unknown'}\n${output}`);
  return { status: 'ok', text: `exit code 0\n${output}` };
}
