import type { ApprovalAnswer } from '../../domain/approval.js';
import type { z } from 'zod';
import {
  compactJobSchema,
  jobAnswerSchema,
  jobListSchema,
  steerAnswerSchema,
  waitAnswerSchema,
} from '../../domain/answer-schema.js';
import type { SteerAnswer } from '../../domain/answer.js';
import { GafferError, type ErrorBody } from '../../domain/errors.js';
import type { LintReport } from '../../domain/spec-lint.js';
import { isFinalStatus } from '../../domain/status.js';
import type { CompactJob } from '../../engine/queries/compact.js';
import type { Engine, WaitAnswer } from '../../engine/engine.js';
import type { RunnerRow } from '../../runners/table.js';
import type { ClusterView } from '../../engine/engine.js';
import { checkAnswer } from '../answer-check.js';
import { CWD_HEADER } from '../http/app.js';
import type { JobEvent } from '../../domain/events.js';

export type { RunnerRow };

/** What the CLI asks of gaffer: answered by the engine in this process, or by a server over HTTP. */
export interface CliApi {
  /** The engine when this process runs the jobs itself. */
  readonly engine: Engine | null;
  submit(body: unknown, idempotencyKey: string | null): Promise<{ job: CompactJob; created: boolean }>;
  get(id: string, full: boolean): Promise<CompactJob>;
  list(limit: number, status: string | undefined): Promise<CompactJob[]>;
  events(id: string, after: number): Promise<{ events: JobEvent[]; produced: number }>;
  cancel(id: string): Promise<CompactJob>;
  /** Answers a job's approval asks (spec 05). */
  approve(id: string, approve: ApprovalAnswer, note: string | null): Promise<CompactJob>;
  /** The open approval asks, oldest first. */
  asks(): Promise<OpenAsk[]>;
  /** A follow-up of a finished job's task (issue 16): a new job told the comments and note. */
  followUp(
    id: string,
    task: string,
    body: { comments: { file: string; line: number; text: string }[]; note?: string },
  ): Promise<{ job: CompactJob; created: boolean }>;
  /** A merge later of a finished worktree job's passing branches (or one task's): a new job. */
  merge(id: string, task: string | null): Promise<{ job: CompactJob; created: boolean }>;
  /** A message to a task of a job (issue 16): read at a builtin worker's next turn, else queued as the task's follow-up. */
  steer(id: string, task: string, message: string): Promise<SteerAnswer>;
  waitFor(id: string, condition: string | undefined, timeoutS: number): Promise<WaitAnswer>;
  /** Calls `onEvent` for each event after `after` until the job is final. */
  follow(id: string, after: number, onEvent: (e: JobEvent) => void): Promise<void>;
  lint(body: unknown): Promise<LintReport>;
  runners(): Promise<RunnerRow[]>;
  /** `GET /api/nodes`: a coordinator's live nodes and runner queues. */
  nodes(): Promise<ClusterView>;
  stats(): Promise<StatsAnswer>;
  /** A new one-time login URL for the board (`gaffer login`): only a server has a board. */
  login(): Promise<{ url: string }>;
}

/** An open ask with its job (`GET /api/asks`, `gaffer asks`). */
export type OpenAsk = ReturnType<Engine['openAsks']>[number];

/** `GET /api/stats`, `gaffer stats`. */
export type StatsAnswer = ReturnType<Engine['stats']>;

/** The engine in this process. */
export class LocalApi implements CliApi {
  readonly engine: Engine;

  constructor(engine: Engine) {
    this.engine = engine;
  }

  // async: a refusal (the engine's, or an answer that fails its schema) is a rejection, as over HTTP
  async submit(body: unknown, idempotencyKey: string | null) {
    const { job, created } = this.engine.submit(body, { idempotencyKey, cwd: process.cwd() });
    return { job: checkAnswer(compactJobSchema, job, 'gaffer dispatch'), created };
  }
  async get(id: string, full: boolean) {
    return checkAnswer(
      jobAnswerSchema(full),
      this.engine.get(id, { full }),
      full ? 'gaffer status --full' : 'gaffer status',
    );
  }
  async list(limit: number, status: string | undefined) {
    const jobs = this.engine.list({ limit, ...(status ? { status } : {}) });
    return checkAnswer(jobListSchema, { jobs }, 'gaffer list').jobs;
  }
  events(id: string, after: number) {
    return Promise.resolve(this.engine.events(id, { after }));
  }
  async cancel(id: string) {
    return checkAnswer(compactJobSchema, this.engine.cancel(id), 'gaffer cancel');
  }
  async approve(id: string, approve: ApprovalAnswer, note: string | null) {
    return checkAnswer(compactJobSchema, this.engine.approve(id, approve, { note }), 'gaffer approve');
  }
  async followUp(id: string, task: string, body: unknown) {
    const { job, created } = await this.engine.followUp(id, task, body);
    return { job: checkAnswer(compactJobSchema, job, 'gaffer follow-up'), created };
  }
  async merge(id: string, task: string | null) {
    const { job, created } = await this.engine.merge(id, task);
    return { job: checkAnswer(compactJobSchema, job, 'gaffer merge'), created };
  }
  async steer(id: string, task: string, message: string) {
    return checkAnswer(steerAnswerSchema, await this.engine.steer(id, task, { message }), 'gaffer steer');
  }
  asks() {
    return Promise.resolve(this.engine.openAsks());
  }
  async waitFor(id: string, condition: string | undefined, timeoutS: number) {
    return checkAnswer(waitAnswerSchema, await this.engine.waitFor(id, condition, timeoutS), 'gaffer wait');
  }
  lint(body: unknown) {
    return Promise.resolve(this.engine.lint(body));
  }
  runners() {
    return Promise.resolve(this.engine.runners());
  }
  nodes(): Promise<ClusterView> {
    return Promise.reject(
      new GafferError(
        'not_supported',
        'no gaffer server runs on this data dir, and only a coordinator (gaffer serve --queue redis://HOST:6379) has nodes: start one, or point GAFFER_URL at it',
      ),
    );
  }
  stats() {
    return Promise.resolve(this.engine.stats());
  }
  login(): Promise<{ url: string }> {
    return Promise.reject(
      new GafferError(
        'invalid_request',
        'no server runs on this data dir: the board comes with `gaffer serve` (which prints a login URL), or give --url',
      ),
    );
  }

  async follow(id: string, after: number, onEvent: (e: JobEvent) => void): Promise<void> {
    let seq = after;
    const drain = () => {
      for (const e of this.engine.events(id, { after: seq }).events) {
        onEvent(e);
        seq = e.seq;
      }
    };
    if (this.engine.runsJob(id)) {
      const off = this.engine.subscribe(id, drain);
      try {
        drain();
        await this.engine.settled(id);
        drain();
      } finally {
        off();
      }
      return;
    }
    // another process runs it: read the store at most every 200 ms (spec 02)
    for (;;) {
      drain();
      if (isFinalStatus(this.engine.get(id).status)) return drain();
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** The longest wait one HTTP request holds (spec 02). */
const HTTP_WAIT_MAX_S = 600;

/** A gaffer server over HTTP (`--url`, `GAFFER_URL`, or the data dir's `server.json`). */
export class HttpApi implements CliApi {
  readonly engine = null;
  readonly #base: string;
  readonly #token: string | null;

  /** `token`: --token, GAFFER_TOKEN, or the data dir's secret for the server it recorded (cli-context.ts). */
  constructor(url: string, token: string | null) {
    this.#base = url.replace(/\/+$/, '');
    this.#token = token;
  }

  get #auth(): Record<string, string> {
    return this.#token ? { authorization: `Bearer ${this.#token}` } : {};
  }

  async #call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    return (await this.#request(method, path, body, headers)).json as T;
  }

  /** An answer route: what the server sent is checked against the answer's schema like any door's. */
  async #answer<S extends z.ZodType>(
    schema: S,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ json: z.output<S>; status: number }> {
    const { json, status } = await this.#request(method, path, body, headers);
    return { json: checkAnswer(schema, json, `${method} ${path.split('?')[0] ?? path} (from ${this.#base})`), status };
  }

  async #request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ json: unknown; status: number }> {
    let res: Response;
    try {
      res = await fetch(`${this.#base}${path}`, {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...this.#auth, ...headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (err) {
      throw new GafferError(
        'internal',
        `cannot reach the gaffer server at ${this.#base}: ${(err as Error).message} — is \`gaffer serve\` running?`,
      );
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      throw new GafferError(
        'internal',
        `the server at ${this.#base} answered ${res.status} with something that is not JSON`,
      );
    }
    if (!res.ok) {
      const e = (json as ErrorBody | null)?.error;
      if (e) {
        const { code, message, field, ...extra } = e;
        throw new GafferError(code, message, field, extra);
      }
      throw new GafferError('internal', `the server answered ${res.status}`);
    }
    return { json, status: res.status };
  }

  async submit(body: unknown, idempotencyKey: string | null) {
    const headers = {
      [CWD_HEADER]: encodeURIComponent(process.cwd()),
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    };
    const { json, status } = await this.#answer(compactJobSchema, 'POST', '/api/jobs', body, headers);
    return { job: json, created: status === 202 };
  }
  async get(id: string, full: boolean) {
    return (
      await this.#answer(jobAnswerSchema(full), 'GET', `/api/jobs/${encodeURIComponent(id)}${full ? '?full=1' : ''}`)
    ).json;
  }
  async list(limit: number, status: string | undefined) {
    const q = new URLSearchParams({ limit: String(limit), ...(status ? { status } : {}) });
    return (await this.#answer(jobListSchema, 'GET', `/api/jobs?${q}`)).json.jobs;
  }
  events(id: string, after: number) {
    return this.#call<{ events: JobEvent[]; produced: number }>(
      'GET',
      `/api/jobs/${encodeURIComponent(id)}/events?after=${after}`,
    );
  }
  async cancel(id: string) {
    return (await this.#answer(compactJobSchema, 'POST', `/api/jobs/${encodeURIComponent(id)}/cancel`)).json;
  }
  async approve(id: string, approve: ApprovalAnswer, note: string | null) {
    return (
      await this.#answer(compactJobSchema, 'POST', `/api/jobs/${encodeURIComponent(id)}/approve`, {
        approve,
        ...(note !== null ? { note } : {}),
      })
    ).json;
  }
  async followUp(id: string, task: string, body: unknown) {
    const answer = await this.#answer(
      compactJobSchema,
      'POST',
      `/api/jobs/${encodeURIComponent(id)}/tasks/${encodeURIComponent(task)}/follow-up`,
      body,
    );
    return { job: answer.json, created: answer.status === 202 };
  }
  async merge(id: string, task: string | null) {
    const answer = await this.#answer(
      compactJobSchema,
      'POST',
      `/api/jobs/${encodeURIComponent(id)}/merge`,
      task === null ? {} : { task },
    );
    return { job: answer.json, created: answer.status === 202 };
  }
  async steer(id: string, task: string, message: string) {
    return (
      await this.#answer(
        steerAnswerSchema,
        'POST',
        `/api/jobs/${encodeURIComponent(id)}/tasks/${encodeURIComponent(task)}/steer`,
        { message },
      )
    ).json;
  }
  async asks() {
    return (await this.#call<{ asks: OpenAsk[] }>('GET', '/api/asks')).asks;
  }
  /** A server holds one wait at most 600 s (spec 02): a longer `--timeout-s` waits again until it is spent. */
  async waitFor(id: string, condition: string | undefined, timeoutS: number) {
    const started = performance.now();
    for (let slice = 0; ; slice++) {
      const left = Math.max(0, timeoutS - (performance.now() - started) / 1000);
      const q = new URLSearchParams({ for: condition ?? 'done', timeout_s: String(Math.min(left, HTTP_WAIT_MAX_S)) });
      const answer = (await this.#answer(waitAnswerSchema, 'GET', `/api/jobs/${encodeURIComponent(id)}/wait?${q}`))
        .json;
      if (answer.met || left <= HTTP_WAIT_MAX_S || isFinalStatus(answer.state.status)) {
        return slice === 0 ? answer : { ...answer, waited_s: Math.round((performance.now() - started) / 100) / 10 };
      }
    }
  }
  lint(body: unknown) {
    return this.#call<LintReport>('POST', '/api/lint', body);
  }
  async runners() {
    return (await this.#call<{ runners: RunnerRow[] }>('GET', '/api/runners')).runners;
  }
  nodes() {
    return this.#call<ClusterView>('GET', '/api/nodes');
  }
  stats() {
    return this.#call<StatsAnswer>('GET', '/api/stats');
  }
  login() {
    return this.#call<{ url: string }>('POST', '/api/login');
  }

  /** Follows the job's SSE stream (resuming with Last-Event-ID after a drop) until its `end` event. */
  async follow(id: string, after: number, onEvent: (e: JobEvent) => void): Promise<void> {
    let last = after;
    for (let attempt = 0; attempt < 100; attempt++) {
      const ended = await this.#stream(id, last, (e) => {
        onEvent(e);
        last = e.seq;
      }).catch(() => false);
      if (ended) return;
      if (isFinalStatus((await this.get(id, false)).status)) {
        for (const e of (await this.events(id, last)).events) onEvent(e);
        return;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  async #stream(id: string, after: number, onEvent: (e: JobEvent) => void): Promise<boolean> {
    const res = await fetch(`${this.#base}/api/jobs/${encodeURIComponent(id)}/events?stream=1`, {
      headers: { accept: 'text/event-stream', 'last-event-id': String(after), ...this.#auth },
    });
    if (!res.ok || !res.body) return false;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const frame = parseFrame(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (frame.event === 'end') return true;
        if (frame.event === 'job' && frame.data) onEvent(JSON.parse(frame.data) as JobEvent);
      }
    }
    return false;
  }
}

/** One SSE frame: `event:` and the joined `data:` lines (comments ignored). */
export function parseFrame(frame: string): { event: string; data: string; id: string | null } {
  let event = 'message';
  let id: string | null = null;
  const data: string[] = [];
  for (const line of frame.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  }
  return { event, data: data.join('\n'), id };
}
