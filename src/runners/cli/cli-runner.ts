import { GafferError } from '../../domain/errors.js';
import { mkdirSync } from 'node:fs';
import { makeFolder, writeNewFile } from '../../platform/files/spare-entries.js';
import { dirname, join } from 'node:path';
import { isSameModel, substitutionError } from '../builtin/attestation.js';
import type { Runner, RunnerInput } from '../contract.js';
import type { RunnerReport, StateDetection } from '../../domain/runner-report.js';
import { envForRunner, type Billing } from '../../platform/process/billing-env.js';
import { runProcess, type ProcessResult } from '../../platform/process/run-process.js';
import {
  agentCliNetwork,
  loopbackPortOf,
  type NetworkMode,
  type SandboxNetwork,
} from '../../platform/sandbox/network.js';
import { createSandbox, isRefused, type Sandbox, type SandboxResult } from '../../platform/sandbox/sandbox.js';
import { classifyOutput, formatSeconds, isSameDetection } from '../states.js';
import { detectCli, type CliDetection } from './detect.js';
import { buildInvocation } from './invocation.js';
import { writeMergedSettings } from './settings-file.js';
import { emptyParse, type CliParse } from './parse-state.js';
import { installHint, type CliEndpoint, type CliProfile } from './profiles.js';
import { cliEndpoint, type ConfiguredEndpoint } from './endpoint.js';
import { blankReport, limitEnd, processFacts } from '../report.js';

/** How one agent CLI runner is set up (from the config's `runners.<key>` and `sandbox`). */
export interface CliRunnerOptions {
  /** Config `runners.<key>.enabled`: agent CLIs are off until enabled (a disabled one refuses every run). Default false. */
  enabled?: boolean;
  /** What keeps it off, when it is (the setting and where it was set), for the runner table; default: the key unset. */
  disabledBy?: string;
  /** Directories searched for the binary before PATH (e.g. a test-only install). */
  binDirs?: string[];
  /** Config `runners.<key>.billing`, default `subscription`: paid-API keys are removed from its env. */
  billing?: Billing;
  /** Config `runners.<key>.home`: the CLI's own HOME; null = the user's. */
  home?: string | null;
  /** A model endpoint to point the CLI at through its base-URL settings; null = its own default (its login). */
  endpoint?: CliEndpoint | null;
  /** Config `models`: the endpoints a roster entry may name for this CLI instead (`endpoint` on the entry). */
  endpoints?: Readonly<Record<string, ConfiguredEndpoint>>;
  /** The engine's sandbox (made from config `sandbox`: platform/sandbox/sandbox.ts); default bubblewrap under `auto`. */
  sandbox?: Sandbox;
  /** Its network in the sandbox, default `outbound` (sandbox/network.ts); its own endpoint's loopback port is forwarded besides. */
  network?: SandboxNetwork;
  /** The outermost prefix of what is spawned (tests: a loopback-only network namespace). */
  launch?: (argv: string[]) => string[];
  /** Between SIGTERM and SIGKILL, ms (default 3000). */
  graceMs?: number;
}

const SUMMARY_CHARS = 2000;

/**
 * One runner class for every agent CLI profile (spec 04): the profile's headless argv with the
 * instruction as one element, cwd = the workspace, its own state dirs, the sandbox around it,
 * its JSON lines parsed as they come. External (a third-party program) and one at a time in a
 * shared workspace (nothing can hold a file lock over it).
 */
export class CliRunner implements Runner {
  readonly key: string;
  readonly canResume: boolean;
  readonly takesPrompt = true;
  readonly external = true;
  readonly sharesWorkspace = false;
  readonly profile: CliProfile;
  readonly #opts: CliRunnerOptions;
  readonly #sandbox: Sandbox;

  constructor(profile: CliProfile, opts: CliRunnerOptions = {}) {
    this.profile = profile;
    this.key = profile.key;
    this.canResume = profile.canResume;
    this.#opts = opts;
    this.#sandbox = opts.sandbox ?? createSandbox('auto');
  }

  /** True when config enabled this agent CLI. */
  get enabled(): boolean {
    return this.#opts.enabled === true;
  }

  /** What keeps it off, or null when it is enabled. */
  get disabledBy(): string | null {
    if (this.enabled) return null;
    return this.#opts.disabledBy ?? `runners.${this.key}.enabled (not set)`;
  }

  /** Whether the binary is installed here, and its version (cached). */
  detect(opts: { refresh?: boolean } = {}): CliDetection {
    return detectCli(this.profile, { binDirs: this.#opts.binDirs ?? [], refresh: opts.refresh });
  }

  /** True when a run would be wrapped in the sandbox. */
  get sandboxed(): boolean {
    return this.#sandbox.works;
  }

  /** Refuses before anything starts: disabled, no known invocation, or not installed (with the install command). */
  vet(task: { model: string | null; endpoint?: string }, field: string): void {
    const profile = this.profile;
    if (task.endpoint !== undefined) this.#endpointNamed(task.endpoint, field);
    if (this.#opts.enabled !== true) {
      throw new GafferError(
        'runner_disabled',
        `${field}: ${profile.key} is disabled: agent CLIs are off until enabled — set runners.${profile.key}.enabled: true in gaffer.config.json (or GAFFER_ENABLED_RUNNERS=${profile.key})`,
        field,
      );
    }
    if (!profile.invocationKnown)
      throw new GafferError(
        'runner_disabled',
        `${field}: ${profile.key} has no known headless invocation in this build`,
        field,
      );
    const found = this.detect();
    if (!found.installed)
      throw new GafferError(
        'runner_not_installed',
        `${field}: ${profile.key} is not installed (${found.reason ?? 'not found'}): ${installHint(profile)}`,
        field,
      );
  }

  /** Runs one worker to its end; never throws. */
  async run(input: RunnerInput): Promise<RunnerReport> {
    const profile = this.profile;
    if (this.#opts.enabled !== true) {
      return refused(
        'runner_disabled',
        `${profile.key} is disabled: set runners.${profile.key}.enabled: true in gaffer.config.json (or GAFFER_ENABLED_RUNNERS=${profile.key})`,
      );
    }
    if (!profile.invocationKnown) return refused('no_invocation', `${profile.key} has no known headless invocation`);
    const found = this.detect();
    if (!found.installed || found.path === null) {
      return refused(
        'runner_not_installed',
        `${profile.key} is not installed (${found.reason ?? 'not found'}): ${installHint(profile)}`,
      );
    }
    let endpoint: CliEndpoint | null;
    try {
      endpoint =
        input.endpoint !== undefined ? this.#endpointNamed(input.endpoint, 'endpoint') : (this.#opts.endpoint ?? null);
    } catch (err) {
      return refused('invalid_request', err instanceof Error ? err.message : String(err));
    }
    const jobDir = dirname(input.logFile);
    // spec 04: TMPDIR inside gaffer's data dir (they litter /tmp otherwise)
    const tmpDir = join(jobDir, 'tmp', `${input.workerName}-${profile.key}`);
    const home = this.#opts.home ?? null;
    const baseEnv = envForRunner(profile.key, this.#opts.billing ?? 'subscription', input.env);
    const inv = buildInvocation(profile, {
      instruction: input.instruction,
      model: input.model,
      resume: input.resume,
      endpoint,
      home,
      userHome: baseEnv.HOME ?? '/',
      tmpDir,
      instructionFile: input.instructionFile,
      isRoot: process.getuid?.() === 0,
    });
    try {
      for (const dir of [tmpDir, ...inv.stateDirs]) mkdirSync(dir, { recursive: true });
      // merged into what the home already holds, never overwritten
      for (const [path, content] of Object.entries(inv.files)) writeMergedSettings(path, content);
      makeFolder(dirname(input.instructionFile));
      writeNewFile(input.instructionFile, input.instruction);
    } catch (err) {
      return {
        ...baseReport(null),
        error: `cannot prepare ${profile.key}'s state: ${err instanceof Error ? err.message : String(err)}`,
      };
    }
    const env: NodeJS.ProcessEnv = { ...baseEnv, ...inv.env, GAFFER_INSTRUCTION_FILE: input.instructionFile };

    let wrapped: SandboxResult | null = null;
    if (input.sandbox) {
      const inside = inv.args.map((a) => profile.ownSandboxOff?.[a] ?? a);
      wrapped = this.#sandbox.wrap({
        argv: commandLine(found.path, inside, inv.promptOnStdin),
        workspace: input.workspace,
        writable: inv.stateDirs,
        readable: [input.instructionFile],
        tmpDir,
        home: null,
        programs: [found.path],
        network: this.#network(endpoint),
      });
      if (isRefused(wrapped)) return refused('sandbox_unavailable', wrapped.refused);
    }
    // unsandboxed, the CLI keeps its own sandbox flags (`ownSandboxOff` only swaps them inside ours)
    const argv = wrapped?.sandboxed === true ? wrapped.argv : commandLine(found.path, inv.args, inv.promptOnStdin);

    const parse = emptyParse();
    let detection: StateDetection | null = null;
    const result = await runProcess({
      argv: this.#opts.launch ? this.#opts.launch(argv) : argv,
      cwd: input.workspace,
      env,
      timeoutMs: input.timeoutMs,
      signal: input.signal,
      graceMs: this.#opts.graceMs,
      logFile: input.logFile,
      onOutput: (lines) => {
        for (const line of lines) profile.parser(line, parse);
        input.onOutput?.(lines);
      },
      onTail: (tail) => {
        // text rules report, they never decide (spec 04): the verdict comes from the parse below
        const next = classifyOutput(tail);
        if (next === null || isSameDetection(next, detection)) return;
        detection = next;
        input.onState?.(next);
      },
      onSpawn: input.onSpawn,
    });
    // gemini: an API error's exit code is the HTTP status mod 256 — its structured error carries no code
    if (
      profile.exitIsHttpStatus === true &&
      parse.isError &&
      parse.apiStatus === null &&
      result.exitCode === 429 % 256
    ) {
      parse.apiStatus = 429;
      parse.rateLimited = true;
    }
    return toReport(result, parse, {
      timeoutMs: input.timeoutMs,
      model: input.model,
      detection,
      sandboxed: wrapped?.sandboxed === true,
      network: wrapped?.network ?? 'host',
    });
  }

  vetEndpoint(name: string, field: string): void {
    this.#endpointNamed(name, field);
  }

  /** A roster entry's `models.<name>` for this CLI (issue 14). */
  #endpointNamed(name: string, field: string): CliEndpoint {
    return cliEndpoint(this.profile, name, this.#opts.endpoints?.[name], field);
  }

  /** Outbound with the host's loopback cut; the configured ports and its own endpoint's loopback port forwarded (a CLI pointed at a local server reaches it). */
  #network(endpoint: CliEndpoint | null): SandboxNetwork {
    const base = this.#opts.network ?? agentCliNetwork({});
    const own = endpoint ? loopbackPortOf(endpoint.url) : null;
    return own === null ? base : { ...base, loopbackPorts: [...(base.loopbackPorts ?? []), own] };
  }
}

/** The argv that runs the binary; a `stdin` profile reads the instruction file on stdin (a constant script; the prompt never meets a shell). */
function commandLine(binary: string, args: string[], promptOnStdin: boolean): string[] {
  return promptOnStdin
    ? ['/bin/sh', '-c', 'exec "$0" "$@" < "$GAFFER_INSTRUCTION_FILE"', binary, ...args]
    : [binary, ...args];
}

function baseReport(result: ProcessResult | null): RunnerReport {
  return blankReport({ status: 'error', outcome: 'panic', stopReason: 'spawn_failed', ...processFacts(result) });
}

function refused(stopReason: string, error: string): RunnerReport {
  return { ...baseReport(null), status: 'refused', outcome: 'expected_error', stopReason, error };
}

function lastLine(text: string): string {
  const line = (text.trimEnd().split('\n').at(-1) ?? '').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** Maps the process end and the parsed stream to the report (spec 04: its diff is the whole story; it files no claims). */
export function toReport(
  result: ProcessResult,
  parse: CliParse,
  ctx: {
    timeoutMs: number;
    model: string | null;
    detection: StateDetection | null;
    sandboxed: boolean;
    network?: NetworkMode;
  },
): RunnerReport {
  const base: RunnerReport = {
    ...baseReport(result),
    summary: (parse.text ?? result.tail).trim().slice(-SUMMARY_CHARS),
    rounds: parse.rounds,
    toolCalls: parse.toolCalls,
    failedCalls: parse.failedCalls,
    inputTokens: parse.inputTokens,
    outputTokens: parse.outputTokens,
    costUsd: parse.costUsd,
    session: parse.session,
    modelServed: parse.model,
    detection: ctx.detection,
    sandboxed: ctx.sandboxed,
    ...(ctx.network === undefined ? {} : { network: ctx.network }),
  };
  if (result.cause !== null && !result.isCancelled) return { ...base, stopReason: 'spawn_failed', error: result.cause };
  if (result.isCancelled) return { ...base, status: 'cancelled', outcome: 'cancelled', stopReason: 'cancelled' };
  const limited = limitEnd(result);
  if (limited !== null) return { ...base, ...limited };
  if (result.timedOut)
    return {
      ...base,
      status: 'timeout',
      outcome: 'panic',
      stopReason: 'timeout',
      error: `timed out after ${formatSeconds(ctx.timeoutMs)}`,
    };
  // spec 04: rate limits are decided from the structured error channel only, never from text rules
  if (parse.rateLimited) {
    return {
      ...base,
      status: 'rate_limited',
      outcome: 'expected_error',
      stopReason: 'rate_limited',
      error: parse.error ?? 'rate limited',
      retryAfterS: parse.retryAfterS,
    };
  }
  if (result.signal !== null) return { ...base, stopReason: 'signal', error: `killed by ${result.signal}` };
  if (ctx.model !== null && parse.model !== null && !isSameModel(ctx.model, parse.model)) {
    return {
      ...base,
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'model_substituted',
      error: substitutionError(parse.model),
    };
  }
  if (result.exitCode === 0 && !parse.isError)
    return { ...base, status: 'done', outcome: 'success', stopReason: 'complete' };
  const why = parse.error ?? lastLine(result.tail);
  const status = parse.apiStatus === null ? '' : ` (API status ${parse.apiStatus})`;
  return {
    ...base,
    status: 'error',
    outcome: 'expected_error',
    stopReason: parse.isError ? 'agent_error' : 'exit_nonzero',
    error: `${why || `exit code ${result.exitCode ?? 'unknown'}`}${status}`,
  };
}
