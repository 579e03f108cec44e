import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, api, type RunnerRow } from '../api.js';
import {
  blankDraft,
  blankTask,
  isLintable,
  keyOfField,
  lintedDraft,
  lintNotes,
  loadDraft,
  requestOf,
  saveDraft,
  taskNames,
  valueAt,
  type FieldNote,
  type JobDraft,
  type TaskDraft,
} from '../components/form-draft.js';
import { Field, FieldNotes, describedBy } from '../components/form-field.js';
import { LintSummary, useLint } from '../components/form-lint.js';
import { TaskFieldset } from '../components/form-task.js';
import { navigate } from '../router.js';

const JOB_FIELDS = [
  'workspace',
  'title',
  'context',
  'verify',
  'fix_rounds',
  'timeout_s',
  'parallel',
  'isolation',
  'merge',
  'reviewer',
  'approval',
  'criteria',
] as const;
const TASK_FIELDS = [
  'instruction',
  'name',
  'type',
  'runner',
  'model',
  'files',
  'criteria',
  'command',
  'done_means',
  'receipts',
  'gates',
] as const;

/** The element id of a form key, so a refusal can take the person to its field. */
function idOfKey(key: string, draft: JobDraft): string | null {
  const task = /^tasks\.(\d+)(?:\.(\w+))?$/.exec(key);
  if (task) {
    const t = draft.tasks[Number(task[1])];
    if (!t) return null;
    return task[2] ? `task-${t.uid}-${task[2]}` : `task-${t.uid}-instruction`;
  }
  if (key === 'verify') return `job-verify-mode-${draft.verifyMode}`;
  return (JOB_FIELDS as readonly string[]).includes(key) ? `job-${key}` : null;
}

/** The form key a note is shown under: its field when the form has it, else its task, else the summary (''). */
function shownUnder(key: string, draft: JobDraft): string {
  const task = /^tasks\.(\d+)(?:\.(\w+))?$/.exec(key);
  if (task) {
    const t = draft.tasks[Number(task[1])];
    if (!t) return '';
    const field = task[2];
    if (field === undefined) return key;
    if (field === 'command' && t.runner !== 'shell') return `tasks.${task[1]}`;
    return (TASK_FIELDS as readonly string[]).includes(field) ? key : `tasks.${task[1]}`;
  }
  if (key === 'merge' && draft.isolation !== 'worktree') return '';
  return (JOB_FIELDS as readonly string[]).includes(key) ? key : '';
}

const newRequestId = () => `board-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

/**
 * New job (spec 08): the job request as a form — workspace, tasks with runner and model, verify,
 * fix rounds, parallel, isolation — linted by the server as it is typed, and dispatched to
 * `POST /api/jobs`. A refusal is shown by its field and the form keeps every value; a dispatched
 * job opens its page.
 */
export function NewJobPage() {
  const [draft, setDraft] = useState<JobDraft>(() => loadDraft() ?? blankDraft());
  const [runners, setRunners] = useState<RunnerRow[]>([]);
  const [models, setModels] = useState<string[]>([]);
  const [workspaces, setWorkspaces] = useState<string[]>([]);
  const [loadError, setLoadError] = useState<string | null>(null);
  // the last dispatch's refusal, with the value of the field it named then: shown while that value stands
  const [refused, setRefused] = useState<{ error: ApiError; value: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const requestId = useRef(newRequestId());
  const refusalBox = useRef<HTMLDivElement>(null);
  const addButton = useRef<HTMLButtonElement>(null);

  const request = useMemo(() => requestOf(draft), [draft]);
  const linted = useMemo(() => lintedDraft(draft), [draft]);
  const lintRequest = useMemo(() => requestOf(linted.draft), [linted]);
  const lint = useLint(lintRequest, isLintable(draft));
  const refusal =
    refused && JSON.stringify(valueAt(request, refused.error.field)) === refused.value ? refused.error : null;
  useEffect(() => saveDraft(draft), [draft]);

  useEffect(() => {
    const failed = (what: string) => (err: unknown) =>
      setLoadError((e) => `${e ? `${e}; ` : ''}${what}: ${err instanceof Error ? err.message : String(err)}`);
    api.runners().then((r) => setRunners(r.runners), failed('the runners could not be read'));
    api
      .stats()
      .then(
        (s) => setModels([...new Set(Object.values(s.acceptance).flatMap((a) => (a.model ? [a.model] : [])))].sort()),
        failed('the models seen could not be read'),
      );
    api.jobs({ limit: 50 }).then((l) => {
      const seen = [...new Set(l.jobs.map((j) => j.workspace))];
      setWorkspaces(seen);
      const latest = seen[0];
      if (latest) setDraft((d) => (d.workspace === '' ? { ...d, workspace: latest } : d));
    }, failed('recent workspaces could not be read'));
  }, []);

  const notes = useMemo(() => {
    const byKey = new Map<string, FieldNote[]>();
    const add = (key: string, note: FieldNote) => {
      const at = shownUnder(key, draft);
      const list = byKey.get(at) ?? [];
      if (!list.some((n) => n.kind === note.kind && n.text === note.text)) byKey.set(at, [...list, note]);
    };
    if (refusal) add(keyOfField(refusal.field), { kind: 'refused', text: refusal.message });
    if (lint.refusal && lint.refusal.code !== 'network')
      add(keyOfField(lint.refusal.field), { kind: 'refused', text: lint.refusal.message });
    if (lint.report) for (const [key, list] of lintNotes(lint.report, draft)) for (const n of list) add(key, n);
    return byKey;
  }, [draft, lint, refusal]);
  const notesOf = (key: string): FieldNote[] => notes.get(key) ?? [];

  const set = (patch: Partial<JobDraft>) => setDraft((d) => ({ ...d, ...patch }));
  const setTask = (uid: number, patch: Partial<TaskDraft>) =>
    setDraft((d) => ({ ...d, tasks: d.tasks.map((t) => (t.uid === uid ? { ...t, ...patch } : t)) }));
  const text = (field: keyof JobDraft) => (e: Event) => set({ [field]: (e.currentTarget as HTMLInputElement).value });
  const names = taskNames(draft);

  const dispatch = async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    setBusy(true);
    setRefused(null);
    try {
      const job = await api.submit({ ...request, client_request_id: requestId.current });
      saveDraft(null);
      navigate({ page: 'job', id: job.id });
    } catch (err) {
      const error =
        err instanceof ApiError ? err : new ApiError(0, 'network', `the server could not be reached: ${String(err)}`);
      setRefused({ error, value: JSON.stringify(valueAt(request, error.field)) });
      setBusy(false);
      requestAnimationFrame(() => refusalBox.current?.focus());
    }
  };

  const refusalTarget = refusal ? idOfKey(shownUnder(keyOfField(refusal.field), draft), draft) : null;

  return (
    <>
      <h1>New job</h1>
      <p class="muted">
        The job request, as the API takes it. The server lints it as you type; nothing starts until you press Dispatch.
      </p>
      {loadError && (
        <p class="error-box" role="status">
          {loadError}
        </p>
      )}
      <div class="form-layout">
        <form class="form-job" aria-label="Job request" noValidate onSubmit={(e) => void dispatch(e)}>
          <section aria-labelledby="form-where">
            <h2 id="form-where">Where</h2>
            <div class="form-grid">
              <Field
                id="job-workspace"
                label="Workspace"
                wide
                hint="An absolute path to an existing folder on the server's machine."
                notes={notesOf('workspace')}
              >
                <input
                  id="job-workspace"
                  type="text"
                  class="mono"
                  required
                  list="form-workspaces"
                  autocomplete="off"
                  spellcheck={false}
                  value={draft.workspace}
                  onInput={text('workspace')}
                  {...describedBy('job-workspace', true, notesOf('workspace'))}
                />
              </Field>
              <datalist id="form-workspaces">
                {workspaces.map((w) => (
                  <option key={w} value={w} />
                ))}
              </datalist>
              <Field
                id="job-title"
                label="Title"
                hint="Optional; else the first instruction's start."
                notes={notesOf('title')}
              >
                <input
                  id="job-title"
                  type="text"
                  value={draft.title}
                  onInput={text('title')}
                  {...describedBy('job-title', true, notesOf('title'))}
                />
              </Field>
              <Field
                id="job-context"
                label="Context"
                hint="Optional; text every worker is given."
                notes={notesOf('context')}
              >
                <textarea
                  id="job-context"
                  rows={2}
                  value={draft.context}
                  onInput={text('context')}
                  {...describedBy('job-context', true, notesOf('context'))}
                />
              </Field>
            </div>
          </section>

          <section aria-labelledby="form-tasks">
            <h2 id="form-tasks">Tasks</h2>
            <FieldNotes id="job-tasks" notes={notesOf('tasks')} />
            {draft.tasks.map((t, i) => (
              <TaskFieldset
                key={t.uid}
                task={t}
                index={i}
                count={draft.tasks.length}
                serverName={names[i] ?? ''}
                runners={runners}
                notes={notesOf}
                onChange={(patch) => setTask(t.uid, patch)}
                onRemove={() => {
                  set({ tasks: draft.tasks.filter((x) => x.uid !== t.uid) });
                  // the removed button took the focus with it: keep the keyboard in the task list
                  requestAnimationFrame(() => addButton.current?.focus());
                }}
              />
            ))}
            <button type="button" ref={addButton} onClick={() => set({ tasks: [...draft.tasks, blankTask()] })}>
              Add a task
            </button>
            <datalist id="form-models">
              {models.map((m) => (
                <option key={m} value={m} />
              ))}
            </datalist>
          </section>

          <section aria-labelledby="form-verification">
            <h2 id="form-verification">Verification</h2>
            <div class="form-grid">
              <fieldset
                class="form-field wide form-radios"
                aria-describedby={notesOf('verify').length ? 'job-verify-notes' : undefined}
              >
                <legend>Verify</legend>
                {(
                  [
                    ['auto', 'auto — detect the project’s tests'],
                    ['command', 'this command'],
                    ['none', 'none — do not verify'],
                  ] as const
                ).map(([value, label]) => (
                  <label key={value} class="form-check">
                    <input
                      type="radio"
                      name="verify"
                      id={`job-verify-mode-${value}`}
                      value={value}
                      checked={draft.verifyMode === value}
                      onChange={() => set({ verifyMode: value })}
                    />{' '}
                    {label}
                  </label>
                ))}
                {draft.verifyMode === 'command' && (
                  <>
                    <label for="job-verify-command">Verify command</label>
                    <input
                      id="job-verify-command"
                      type="text"
                      class="mono"
                      value={draft.verifyCommand}
                      placeholder="npm test"
                      onInput={text('verifyCommand')}
                    />
                  </>
                )}
                <FieldNotes id="job-verify" notes={notesOf('verify')} />
              </fieldset>
              <Field
                id="job-fix_rounds"
                label="Fix rounds"
                hint="0–4; a maximum, not a quota (default 1)."
                notes={notesOf('fix_rounds')}
              >
                <input
                  id="job-fix_rounds"
                  type="number"
                  inputMode="numeric"
                  min={0}
                  max={4}
                  value={draft.fixRounds}
                  placeholder="1"
                  onInput={text('fixRounds')}
                  {...describedBy('job-fix_rounds', true, notesOf('fix_rounds'))}
                />
              </Field>
            </div>
          </section>

          <section aria-labelledby="form-how">
            <h2 id="form-how">How it runs</h2>
            <div class="form-grid">
              <div class="form-field">
                <label class="form-check">
                  <input
                    type="checkbox"
                    id="job-parallel"
                    checked={draft.parallel}
                    onChange={(e) => set({ parallel: e.currentTarget.checked })}
                    {...describedBy('job-parallel', false, notesOf('parallel'))}
                  />{' '}
                  Run the tasks in parallel
                </label>
                <FieldNotes id="job-parallel" notes={notesOf('parallel')} />
              </div>
              <div class="form-field">
                <label class="form-check">
                  <input
                    type="checkbox"
                    id="job-reviewer"
                    checked={draft.reviewer}
                    onChange={(e) => set({ reviewer: e.currentTarget.checked })}
                    {...describedBy('job-reviewer', true, notesOf('reviewer'))}
                  />{' '}
                  Add a reviewer
                </label>
                <p class="form-hint" id="job-reviewer-hint">
                  A read-only review task after the others, on an agent runner.
                </p>
                <FieldNotes id="job-reviewer" notes={notesOf('reviewer')} />
              </div>
              <Field
                id="job-isolation"
                label="Isolation"
                hint="worktree: a git worktree and branch per task (a git workspace)."
                notes={notesOf('isolation')}
              >
                <select
                  id="job-isolation"
                  value={draft.isolation}
                  onChange={(e) => set({ isolation: e.currentTarget.value as JobDraft['isolation'] })}
                  {...describedBy('job-isolation', true, notesOf('isolation'))}
                >
                  <option value="shared">shared — the workspace itself</option>
                  <option value="worktree">worktree — a branch per task</option>
                </select>
              </Field>
              {draft.isolation === 'worktree' && (
                <Field
                  id="job-merge"
                  label="Merge"
                  hint="auto: merge the passing branches, verify the merged tree, apply it."
                  notes={notesOf('merge')}
                >
                  <select
                    id="job-merge"
                    value={draft.merge}
                    onChange={(e) => set({ merge: e.currentTarget.value as JobDraft['merge'] })}
                    {...describedBy('job-merge', true, notesOf('merge'))}
                  >
                    <option value="none">none — leave the branches</option>
                    <option value="auto">auto — merge what passed</option>
                  </select>
                </Field>
              )}
              <Field
                id="job-approval"
                label="Approval"
                hint="auto: ask where the policy says; required: ask for every task."
                notes={notesOf('approval')}
              >
                <select
                  id="job-approval"
                  value={draft.approval}
                  onChange={(e) => set({ approval: e.currentTarget.value as JobDraft['approval'] })}
                  {...describedBy('job-approval', true, notesOf('approval'))}
                >
                  <option value="auto">auto</option>
                  <option value="required">required</option>
                  <option value="never">never</option>
                </select>
              </Field>
              <Field
                id="job-timeout_s"
                label="Worker timeout (s)"
                hint="Per worker, 10–86400 (default: the config's)."
                notes={notesOf('timeout_s')}
              >
                <input
                  id="job-timeout_s"
                  type="number"
                  inputMode="numeric"
                  min={10}
                  value={draft.timeoutS}
                  onInput={text('timeoutS')}
                  {...describedBy('job-timeout_s', true, notesOf('timeout_s'))}
                />
              </Field>
              <Field
                id="job-criteria"
                label="Job criteria"
                wide
                hint={
                  draft.isolation === 'worktree'
                    ? 'Not supported with worktree isolation (the server refuses it: each task is judged in its own worktree) — give criteria per task.'
                    : 'What must be true of the whole job; one a line.'
                }
                notes={notesOf('criteria')}
              >
                <textarea
                  id="job-criteria"
                  rows={2}
                  value={draft.criteria}
                  disabled={draft.isolation === 'worktree'}
                  onInput={text('criteria')}
                  {...describedBy('job-criteria', true, notesOf('criteria'))}
                />
              </Field>
            </div>
          </section>

          {refusal && (
            <div class="error-box form-refusal" role="alert" tabIndex={-1} ref={refusalBox}>
              <p>
                <strong>Not dispatched</strong> — the server refused it ({refusal.code}
                {refusal.field ? `, field ${refusal.field}` : ''}): {refusal.message}
              </p>
              {refusalTarget && (
                <button type="button" onClick={() => document.getElementById(refusalTarget)?.focus()}>
                  Go to the field
                </button>
              )}
              <p class="form-hint">Nothing was started; the form keeps what you typed.</p>
            </div>
          )}
          {notesOf('').length > 0 && !refusal && <FieldNotes id="job-general" notes={notesOf('')} />}
          <div class="row form-actions">
            <button type="submit" class="primary" disabled={busy}>
              {busy ? 'Dispatching…' : 'Dispatch'}
            </button>
            <button
              type="button"
              onClick={() => {
                setRefused(null);
                setDraft(blankDraft(draft.workspace));
              }}
            >
              Clear the form
            </button>
          </div>
        </form>
        <aside class="form-aside" aria-label="Spec lint">
          <LintSummary lint={lint} blank={linted.blank} />
        </aside>
      </div>
    </>
  );
}
