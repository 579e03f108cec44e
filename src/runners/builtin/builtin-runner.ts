import { GafferError } from '../../domain/errors.js';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { ModelMessage } from 'ai';
import type { Runner, RunnerInput } from '../contract.js';
import type { Refusal, RunnerReport, StateDetection } from '../../domain/runner-report.js';
import { steerPrompt } from '../../domain/steer.js';
import { buildWorkerEnv } from '../../platform/process/env.js';
import { readStartEnv } from '../../platform/process/scrub-env.js';
import type { SandboxNetwork } from '../../platform/sandbox/network.js';
import type { Sandbox } from '../../platform/sandbox/sandbox.js';
import { isSameModel } from './attestation.js';
import { COMMAND_OUTPUT_BYTES, COMMAND_TIMEOUT_MS } from './command-tool.js';
import { FILE_LOCKS, type FileLocks } from './file-locks.js';
import { guardScope } from './guard.js';
import { endpointFromEnv, type BuiltinEndpoint } from './model.js';
import type { ProviderHttpError } from './rate-limit.js';
import { loadSdk } from './sdk.js';
import { buildReport, type LoopFacts, type StopCause } from './report.js';
import { disabledReport, refuseIfDisabled, type LocalSwitch } from '../report.js';
import { loadSession, saveSession, sessionPathFor } from './session.js';
import { systemPrompt } from './system-prompt.js';
import type { ToolContext, ToolOutcome } from './tool-context.js';
import { SteeredConversation } from './steered-conversation.js';
import { Transcript, clipForLine } from './transcript.js';
import { Watchdog } from './watchdog.js';
import { realWorkspace } from './workspace-paths.js';
import { writeScopeFor } from './write-scope.js';

/** Options of the builtin runner. */
export interface BuiltinRunnerOptions extends LocalSwitch {
  /**
   * The model endpoint (from config or env, never a request), or a function read at each run
   * (so a config reload takes effect). Default: `GAFFER_MODEL_*` from the environment.
   */
  endpoint?: BuiltinEndpoint | null | (() => BuiltinEndpoint | null);
  /**
   * Config `models` by name, as the builtin agent speaks them (openai-compatible or anthropic): a
   * roster entry's or the judge's `endpoint` picks one instead of the default. Never from a request.
   */
  endpoints?: Readonly<Record<string, BuiltinEndpoint>>;
  /** No token and no tool call for this long = `stalled`, ms (default 180000). */
  idleMs?: number;
  /** The same failing call this many times = `stuck` (default 3). */
  stuckRepeats?: number;
  /** `run_command` limits (defaults 120 s, 16 KiB). */
  commandTimeoutMs?: number;
  commandOutputBytes?: number;
  /** The lock table (default: the process-wide one). */
  locks?: FileLocks;
  /** Output tokens per round; default: the provider's (the Anthropic provider caps models it does not know at 4096). */
  maxOutputTokens?: number;
  /**
   * The engine's sandbox for `run_command` (used when `input.sandbox`); the file tools are confined
   * by path checks. Without one (or under `sandbox: off`), commands run unsandboxed and the report says so.
   */
  sandbox?: Sandbox;
  /** `run_command`'s network in the sandbox; default `none`. */
  network?: SandboxNetwork;
  /** Log caps, bytes (defaults 64 KiB head, 10 MiB tail). */
  logHeadBytes?: number;
  logTailBytes?: number;
}

/** The child env of `run_command`: scrubbed, and never holding the model key under any name. */
function commandEnv(base: NodeJS.ProcessEnv, key: string | null | undefined): NodeJS.ProcessEnv {
  const env = buildWorkerEnv(base);
  if (key !== null && key !== undefined && key !== '') {
    for (const [name, value] of Object.entries(env)) if (value === key) delete env[name];
  }
  return env;
}

/** The model name a raw provider chunk says served it (OpenAI chunk `model`, Anthropic `message_start`). */
function servedModelOf(raw: unknown): string | null {
  if (raw === null || typeof raw !== 'object') return null;
  const chunk = raw as { type?: unknown; model?: unknown; message?: { model?: unknown } };
  if (chunk.type === 'message_start' && typeof chunk.message?.model === 'string') return chunk.message.model;
  return typeof chunk.model === 'string' && chunk.model !== '' ? chunk.model : null;
}

/**
 * `builtin` (spec 04): gaffer's own agent — a tool-calling loop on the Vercel AI SDK against an
 * OpenAI-compatible server or the Anthropic Messages API, with the lean tool set, path
 * confinement, the command guard, write scope, file locks, the watchdog, rate limits read from
 * the provider's HTTP status, model attestation, and a session file a fix round can resume.
 */
export class BuiltinRunner implements Runner {
  readonly key = 'builtin';
  readonly canResume = true;
  readonly takesPrompt = true;
  readonly sharesWorkspace = true;
  readonly takesInput = true;
  readonly #opts: BuiltinRunnerOptions;

  constructor(opts: BuiltinRunnerOptions = {}) {
    this.#opts = opts;
    // the SDK prints provider warnings to the daemon's stderr by default; they go to each
    // worker's transcript instead (see 'start-step')
    globalThis.AI_SDK_LOG_WARNINGS = false;
  }

  /** True when the agent's commands would run in the sandbox: one is installed and bubblewrap works here. */
  get sandboxed(): boolean {
    return this.#opts.sandbox?.works ?? false;
  }

  /** Config `runners.builtin.enabled` (default true). */
  get enabled(): boolean {
    return this.#opts.enabled !== false;
  }

  get disabledBy(): string | null {
    return this.enabled ? null : (this.#opts.disabledBy ?? 'runners.builtin.enabled');
  }

  /** The sandbox this run's commands go through: none unless the worker is sandboxed and the policy is not `off`. */
  #sandboxFor(input: RunnerInput): Sandbox | undefined {
    const sandbox = this.#opts.sandbox;
    return input.sandbox && sandbox !== undefined && sandbox.policy !== 'off' ? sandbox : undefined;
  }

  #endpoint(): BuiltinEndpoint | null {
    const given = this.#opts.endpoint;
    if (typeof given === 'function') return given();
    if (given !== undefined) return given;
    // GAFFER_MODEL_KEY was taken out of process.env at the CLI's start (scrub-env.ts)
    const fromEnv = endpointFromEnv(readStartEnv());
    return fromEnv?.ok === true ? fromEnv.endpoint : null;
  }

  /**
   * The `models.<name>` a roster entry (or the judge) names; refused, naming `field`, the name and the
   * endpoints there are, when there is none the builtin agent can use.
   */
  #namedEndpoint(name: string, field: string): BuiltinEndpoint {
    const endpoints = this.#opts.endpoints ?? {};
    const endpoint = endpoints[name];
    if (endpoint !== undefined) return endpoint;
    const names = Object.keys(endpoints);
    throw new GafferError(
      'invalid_request',
      `${field}: "${name}" is not a model endpoint the builtin agent can use (${names.length > 0 ? `models: ${names.join(', ')}` : 'no openai-compatible or anthropic models are configured'}) — add models.${name} with its url, or name another`,
      field,
    );
  }

  /**
   * One answer from the model, no tools, no workspace (the roster's judge drafting an ask's
   * recommendation, spec 05): through the same provider stack as the agent, against the judge's
   * `endpoint` when it names one. Throws when there is no endpoint or the call fails; the caller
   * then says the judge abstained.
   */
  async complete(request: {
    system: string;
    prompt: string;
    model: string | null;
    endpoint?: string;
    timeoutMs: number;
  }): Promise<string> {
    const endpoint =
      request.endpoint !== undefined ? this.#namedEndpoint(request.endpoint, 'endpoint') : this.#endpoint();
    const modelId = request.model ?? endpoint?.model ?? null;
    if (endpoint === null || modelId === null)
      throw new Error(
        `no model endpoint (or no model) is configured for builtin${request.endpoint !== undefined ? ` on models.${request.endpoint}` : ''}`,
      );
    const { generateText, createLanguageModel } = await loadSdk();
    const result = await generateText({
      model: createLanguageModel(endpoint, modelId),
      system: request.system,
      prompt: request.prompt,
      maxRetries: 0,
      abortSignal: AbortSignal.timeout(request.timeoutMs),
    });
    return result.text.trim();
  }

  /** Refuses before anything starts when there is no endpoint (the named one, or the default), or no model for this task. */
  vet(task: { model: string | null; endpoint?: string }, field: string): void {
    refuseIfDisabled(this.key, this.#opts, field);
    if (task.endpoint !== undefined) {
      if ((task.model ?? this.#namedEndpoint(task.endpoint, field).model) === null) {
        throw new GafferError(
          'model_endpoint_missing',
          `${field}: no model named and models.${task.endpoint} has none — give the roster entry a "model" or set models.${task.endpoint}.model`,
          field,
        );
      }
      return;
    }
    const endpoint = this.#endpoint();
    if (endpoint === null) {
      throw new GafferError(
        'model_endpoint_missing',
        `${field}: builtin needs a model endpoint — set GAFFER_MODEL_URL (and GAFFER_MODEL) or models.default in gaffer.config.json`,
        field,
      );
    }
    if ((task.model ?? endpoint.model) === null) {
      throw new GafferError(
        'model_endpoint_missing',
        `${field}: no model named and the endpoint has no default — give the task a "model" or set GAFFER_MODEL`,
        field,
      );
    }
  }

  /** Refuses (naming `field`) a `models.<name>` the builtin agent cannot run against. */
  vetEndpoint(name: string, field: string): void {
    this.#namedEndpoint(name, field);
  }

  /** Runs one builtin worker to its end; never throws. */
  async run(input: RunnerInput): Promise<RunnerReport> {
    if (!this.enabled) return disabledReport(this.key, this.#opts);
    const began = performance.now();
    const facts: LoopFacts = {
      began,
      rounds: 0,
      toolCalls: 0,
      failedCalls: 0,
      inputTokens: 0,
      outputTokens: 0,
      filesChanged: new Set(),
      refusals: new Map(),
      modelServed: null,
      finalText: '',
      lastStepHadToolCalls: false,
      session: null,
      sessionError: null,
      timeoutMs: input.timeoutMs,
      maxRounds: input.maxRounds,
      sandboxed: this.#sandboxFor(input) !== undefined,
    };
    let endpoint: BuiltinEndpoint | null;
    try {
      // a roster entry's endpoint (issue 34): each rung of a ladder may run against its own
      endpoint = input.endpoint !== undefined ? this.#namedEndpoint(input.endpoint, 'endpoint') : this.#endpoint();
    } catch (err) {
      return buildReport(facts, { kind: 'setup', error: err instanceof Error ? err.message : String(err) }, null);
    }
    if (endpoint === null) {
      return buildReport(
        facts,
        {
          kind: 'setup',
          error: 'the builtin runner has no model endpoint: set GAFFER_MODEL_URL and GAFFER_MODEL (or configure one)',
        },
        null,
      );
    }
    try {
      if (!statSync(input.workspace).isDirectory()) throw new Error('not a directory');
    } catch {
      return buildReport(
        facts,
        { kind: 'setup', error: `the workspace ${input.workspace} does not exist or is not a directory` },
        null,
      );
    }
    let history: ModelMessage[] = [];
    if (input.resume !== null) {
      const loaded = loadSession(input.resume);
      if (!loaded.ok) return buildReport(facts, { kind: 'setup', error: `cannot resume: ${loaded.why}` }, null);
      history = loaded.session.messages;
    }
    const modelId = input.model ?? endpoint.model;
    if (modelId === null) {
      const setIt =
        input.endpoint !== undefined ? `models.${input.endpoint}.model` : 'GAFFER_MODEL or models.default.model';
      return buildReport(
        facts,
        {
          kind: 'setup',
          error: `no model selected: the task names none and the builtin endpoint has no default model (set ${setIt})`,
        },
        null,
      );
    }
    const root = realWorkspace(input.workspace);
    const sessionPath = sessionPathFor(input.logFile, input.workerName);
    const transcript = new Transcript(input.logFile, input.onOutput, {
      headBytes: this.#opts.logHeadBytes,
      tailBytes: this.#opts.logTailBytes,
    });
    const stop = new AbortController();
    let cause: StopCause | null = null;
    const stopFor = (why: StopCause): void => {
      cause ??= why;
      stop.abort();
    };
    let detection: StateDetection | null = null;
    const report = (d: StateDetection): void => {
      detection = d;
      input.onState?.(d);
    };
    const watchdog = new Watchdog({
      idleMs: this.#opts.idleMs ?? 180_000,
      stuckRepeats: this.#opts.stuckRepeats ?? 3,
      onTrip: (trip) => {
        transcript.lines([`[watchdog] ${trip.status}: ${trip.why}`]);
        if (trip.status === 'stuck') report({ state: 'stuck', why: trip.why, matched: trip.why, confidence: 1 });
        stopFor({ kind: trip.status, why: trip.why });
      },
    });
    const onAbort = (): void => stopFor({ kind: 'cancelled' });
    input.signal.addEventListener('abort', onAbort, { once: true });
    if (input.signal.aborted) onAbort();
    const timer = setTimeout(() => stopFor({ kind: 'timeout' }), Math.min(Math.max(input.timeoutMs, 0), 2 ** 31 - 1));

    const holder = {
      id: `${input.jobId}/${input.workerName}/${input.attempt}/${randomUUID()}`,
      name: input.workerName,
    };
    const locks = this.#opts.locks ?? FILE_LOCKS;
    const ctx: ToolContext = {
      root,
      scope: writeScopeFor(input.role, input.files, input.outputs),
      locks,
      holder,
      guard: guardScope(root, input.env),
      env: commandEnv(input.env, endpoint.key),
      signal: stop.signal,
      commandTimeoutMs: this.#opts.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
      commandOutputBytes: this.#opts.commandOutputBytes ?? COMMAND_OUTPUT_BYTES,
      onCommandOutput: (lines) => transcript.commandOutput(lines),
      ...(input.onSpawn !== undefined ? { onSpawn: input.onSpawn } : {}),
    };
    const sandbox = this.#sandboxFor(input);
    if (sandbox !== undefined) {
      ctx.sandbox = sandbox;
      if (this.#opts.network !== undefined) ctx.network = this.#opts.network;
      ctx.onCommandSandboxed = (sandboxed) => {
        facts.sandboxed &&= sandboxed;
      };
    }
    const onToolEnd = (name: string, args: unknown, outcome: ToolOutcome): void => {
      watchdog.toolEnded(name, args, outcome.status !== 'ok');
      transcript.toolResult(name, outcome.status, outcome.text);
      if (outcome.status === 'ok' && outcome.wrote !== undefined) facts.filesChanged.add(outcome.wrote);
      if (outcome.status === 'failed') facts.failedCalls++;
      if (outcome.status === 'refused') {
        const key = `${name}\0${outcome.why}`;
        const seen: Refusal = facts.refusals.get(key) ?? { tool: name, why: outcome.why, count: 0 };
        seen.count++;
        facts.refusals.set(key, seen);
      }
    };
    const { streamText, stepCountIs, createLanguageModel, buildTools, readProviderError } = await loadSdk();
    const tools = buildTools(ctx, { onStart: () => watchdog.toolStarted(), onEnd: onToolEnd });

    const messages: ModelMessage[] = [...history, { role: 'user', content: input.instruction }];
    const steers = new SteeredConversation(messages.length);
    const persist = (conversation: ModelMessage[]): void => {
      const error = saveSession(sessionPath, {
        version: 1,
        runner: 'builtin',
        worker: input.workerName,
        model: modelId,
        messages: conversation,
      });
      facts.sessionError = error;
      if (error === null) facts.session = sessionPath;
    };
    persist(messages);

    let providerError: ProviderHttpError | null = null;
    let loopError: string | null = null;
    let stepServed: string | null = null;
    let stepText = '';
    watchdog.start();
    try {
      const result = streamText({
        model: createLanguageModel(endpoint, modelId),
        system: systemPrompt(input, root),
        messages,
        tools,
        stopWhen: stepCountIs(Math.max(1, input.maxRounds)),
        // spec 04: gaffer, not the SDK, sees and decides about rate limits
        maxRetries: 0,
        ...(this.#opts.maxOutputTokens !== undefined ? { maxOutputTokens: this.#opts.maxOutputTokens } : {}),
        abortSignal: stop.signal,
        includeRawChunks: true,
        onError: () => {
          // read from the stream's error part below (the default handler prints to stderr)
        },
        // issue 16: messages sent to the task while it runs join the conversation before the next model call
        prepareStep: ({ messages: stepMessages }) => {
          const taken = input.inbox?.take() ?? [];
          for (const m of taken)
            transcript.lines([
              `[steer] ${m.id} delivered before round ${facts.rounds + 1}: ${clipForLine(m.text, 300)}`,
            ]);
          steers.add(
            stepMessages.length,
            taken.map((m) => steerPrompt(m.text)),
          );
          if (steers.isEmpty) return undefined;
          const conversation = steers.weave(stepMessages);
          if (taken.length > 0) persist(conversation);
          return { messages: conversation };
        },
        onStepFinish: (step) => {
          persist(steers.weave([...messages, ...step.response.messages]));
        },
      });
      for await (const part of result.fullStream) {
        switch (part.type) {
          case 'start-step':
            facts.rounds++;
            stepServed = null;
            stepText = '';
            transcript.round(facts.rounds, modelId);
            transcript.lines(part.warnings.map((w) => `[warning] ${clipForLine(JSON.stringify(w), 300)}`));
            watchdog.progress();
            break;
          case 'raw': {
            const served: string | null = stepServed === null ? servedModelOf(part.rawValue) : null;
            if (served !== null) {
              stepServed = served;
              facts.modelServed = served;
              if (!isSameModel(modelId, served)) stopFor({ kind: 'substituted', served });
            }
            break;
          }
          case 'text-delta':
            stepText += part.text;
            watchdog.progress();
            break;
          case 'reasoning-delta':
          case 'tool-input-start':
          case 'tool-input-delta':
            watchdog.progress();
            break;
          case 'tool-call':
            facts.toolCalls++;
            watchdog.progress();
            transcript.toolCall(part.toolName, part.input);
            break;
          case 'tool-error':
            // the SDK's own refusal of a call (bad arguments, unknown tool): our tools never throw
            facts.failedCalls++;
            watchdog.recordCall(part.toolName, part.input, true);
            transcript.toolResult(part.toolName, 'failed', String(part.error));
            break;
          case 'finish-step':
            facts.inputTokens += part.usage.inputTokens ?? 0;
            facts.outputTokens += part.usage.outputTokens ?? 0;
            facts.lastStepHadToolCalls = part.finishReason === 'tool-calls';
            transcript.modelText(stepText);
            if (stepText.trim() !== '') facts.finalText = stepText;
            break;
          case 'error':
            providerError ??= readProviderError(part.error);
            loopError ??= part.error instanceof Error ? part.error.message : String(part.error);
            break;
          default:
            break;
        }
      }
    } catch (err) {
      if (!stop.signal.aborted) {
        providerError ??= readProviderError(err);
        loopError ??= err instanceof Error ? err.message : String(err);
      }
    } finally {
      watchdog.stop();
      clearTimeout(timer);
      input.signal.removeEventListener('abort', onAbort);
      locks.releaseAll(holder.id);
    }
    if (facts.finalText === '' && stepText.trim() !== '') facts.finalText = stepText;
    const rateLimited = providerError as ProviderHttpError | null;
    if (rateLimited?.isRateLimited === true) {
      report({
        state: 'rate_limited',
        why: `the model API answered HTTP ${rateLimited.statusCode}`,
        matched: `HTTP ${rateLimited.statusCode}`,
        confidence: 1,
      });
    } else if (rateLimited !== null && (rateLimited.statusCode === 401 || rateLimited.statusCode === 403)) {
      report({
        state: 'auth_error',
        why: `the model API answered HTTP ${rateLimited.statusCode}`,
        matched: `HTTP ${rateLimited.statusCode}`,
        confidence: 1,
      });
    }
    const end = buildReport(facts, { kind: 'loop', cause, providerError: rateLimited, loopError }, detection);
    transcript.lines([`[end] ${end.status}${end.error === null ? '' : `: ${end.error}`}`]);
    transcript.close();
    return end;
  }
}
