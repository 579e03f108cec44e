// The board's one door to the server: the HTTP API of spec 02, typed by the server's own answer
// types (type-only imports: nothing of the server is bundled, and there is no second model here).
import type { AskJson } from '../../src/domain/approval.js';
import type { CompactJob, FullJob, JobList, SteerAnswer, WaitAnswerJson } from '../../src/domain/answer.js';
import type { JobEvent } from '../../src/domain/events.js';
import type { JobStatus } from '../../src/domain/status.js';
import type { Engine } from '../../src/engine/engine.js';

export type { AskJson, CompactJob, FullJob, JobEvent, JobStatus, SteerAnswer, WaitAnswerJson };
export type BriefJob = JobList['jobs'][number];
export type OpenAsk = ReturnType<Engine['openAsks']>[number];
export type RunnerRow = ReturnType<Engine['runners']>[number];
export type RosterAnswer = ReturnType<Engine['roster']>;
export type ClusterView = Awaited<ReturnType<Engine['nodes']>>;
export type Stats = ReturnType<Engine['stats']>;
export type LintReport = ReturnType<Engine['lint']>;
/** The job request as `POST /api/jobs` and `POST /api/lint` take it (spec 02), and a task's type. */
export type { JobRequestInput } from '../../src/domain/request.js';
export type { TaskType } from '../../src/domain/status.js';

/** A refusal as the server words it (spec 02 error body): the code, the message, the field. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

async function request(method: string, path: string, body?: unknown): Promise<Response> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { ...init.headers, 'content-type': 'application/json' };
  }
  const res = await fetch(path, init);
  if (!res.ok) {
    let error: { code?: string; message?: string; field?: string } = {};
    try {
      error = ((await res.json()) as { error?: typeof error }).error ?? {};
    } catch {
      // not the spec 02 body: say the status
    }
    throw new ApiError(
      res.status,
      error.code ?? 'http_' + res.status,
      error.message ?? `${method} ${path}: HTTP ${res.status}`,
      error.field,
    );
  }
  return res;
}

const json = async <T>(method: string, path: string, body?: unknown): Promise<T> =>
  (await (await request(method, path, body)).json()) as T;
const text = async (path: string): Promise<string> => (await request('GET', path)).text();
const seg = encodeURIComponent;

export const api = {
  jobs: (opts: { status?: string; limit?: number } = {}) => {
    const q = new URLSearchParams({ limit: String(opts.limit ?? 200) });
    if (opts.status) q.set('status', opts.status);
    return json<JobList>('GET', `/api/jobs?${q}`);
  },
  job: (id: string) => json<FullJob>('GET', `/api/jobs/${seg(id)}?full=1`),
  /** The compact answer (spec 03), for a row that needs no evidence. */
  compact: (id: string) => json<CompactJob>('GET', `/api/jobs/${seg(id)}`),
  events: (id: string, after = 0) => json<{ events: JobEvent[] }>('GET', `/api/jobs/${seg(id)}/events?after=${after}`),
  submit: (request: unknown) => json<CompactJob>('POST', '/api/jobs', request),
  lint: (request: unknown) => json<LintReport>('POST', '/api/lint', request),
  asks: () => json<{ asks: OpenAsk[] }>('GET', '/api/asks'),
  /** `approve`: the whole job, or per ask by task name. */
  approve: (id: string, approve: boolean | Record<string, boolean>, note?: string) =>
    json<CompactJob>('POST', `/api/jobs/${seg(id)}/approve`, { approve, ...(note ? { note } : {}) }),
  cancel: (id: string) => json<CompactJob>('POST', `/api/jobs/${seg(id)}/cancel`),
  redispatch: (id: string) => json<CompactJob>('POST', `/api/jobs/${seg(id)}/redispatch`),
  followUp: (
    id: string,
    task: string,
    body: { comments?: { file: string; line: number; text: string }[]; note?: string },
  ) => json<CompactJob>('POST', `/api/jobs/${seg(id)}/tasks/${seg(task)}/follow-up`, body),
  steer: (id: string, task: string, message: string) =>
    json<SteerAnswer>('POST', `/api/jobs/${seg(id)}/tasks/${seg(task)}/steer`, { message }),
  /** `task`: a worktree job's task, whose branch the diff is read on (against the job's base). */
  diff: (id: string, path: string, task?: string) =>
    text(`/api/jobs/${seg(id)}/diff?path=${seg(path)}${task === undefined ? '' : `&task=${seg(task)}`}`),
  log: (id: string, worker: string, tail = 200) => text(`/api/jobs/${seg(id)}/workers/${seg(worker)}/log?tail=${tail}`),
  runners: () => json<{ runners: RunnerRow[] }>('GET', '/api/runners'),
  roster: () => json<RosterAnswer>('GET', '/api/roster'),
  nodes: () => json<ClusterView>('GET', '/api/nodes'),
  stats: () => json<Stats>('GET', '/api/stats'),
};
