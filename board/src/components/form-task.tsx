import type { RunnerRow, TaskType } from '../api.js';
import { TASK_TYPE_LABELS, type FieldNote, type TaskDraft } from './form-draft.js';
import { Field, FieldNotes, describedBy } from './form-field.js';

/** Why a runner cannot be picked, or null when it can. */
function unusable(r: RunnerRow): string | null {
  if (!r.installed) return 'not installed';
  if (!r.enabled) return 'disabled';
  return null;
}

interface TaskProps {
  task: TaskDraft;
  index: number;
  count: number;
  /** The name the server will give it (its own, else worker-N). */
  serverName: string;
  runners: readonly RunnerRow[];
  notes: (key: string) => FieldNote[];
  onChange: (patch: Partial<TaskDraft>) => void;
  onRemove: () => void;
}

/** One task of the New job form: its instruction, name, type, runner and model, files, criteria, the shell's command, and its done_means, receipts and gates. */
export function TaskFieldset({ task, index, count, serverName, runners, notes, onChange, onRemove }: TaskProps) {
  const id = (field: string) => `task-${task.uid}-${field}`;
  const key = (field: string) => `tasks.${index}.${field}`;
  const own = notes(`tasks.${index}`);
  const shell = task.runner === 'shell';
  const input = (field: keyof TaskDraft) => (e: Event) =>
    onChange({ [field]: (e.currentTarget as HTMLInputElement).value });
  return (
    <fieldset class="form-task" aria-describedby={own.length ? `${id('task')}-notes` : undefined}>
      <legend>
        Task {index + 1} <span class="muted">({serverName})</span>
      </legend>
      <FieldNotes id={id('task')} notes={own} />
      <div class="form-grid">
        <Field
          id={id('instruction')}
          label="Instruction"
          wide
          hint={
            shell
              ? 'For the shell runner, the command to run (unless Command is set).'
              : 'What to change, where, and what done looks like.'
          }
          notes={notes(key('instruction'))}
        >
          <textarea
            id={id('instruction')}
            rows={4}
            value={task.instruction}
            onInput={input('instruction')}
            {...describedBy(id('instruction'), true, notes(key('instruction')))}
          />
        </Field>
        <Field
          id={id('name')}
          label="Name"
          hint="Optional; unique in the job (a-z, 0-9, . _ -)."
          notes={notes(key('name'))}
        >
          <input
            id={id('name')}
            type="text"
            value={task.name}
            placeholder={`worker-${index + 1}`}
            autocomplete="off"
            onInput={input('name')}
            {...describedBy(id('name'), true, notes(key('name')))}
          />
        </Field>
        <Field id={id('type')} label="Type" notes={notes(key('type'))}>
          <select
            id={id('type')}
            value={task.type}
            onChange={(e) => onChange({ type: e.currentTarget.value as TaskType | '' })}
            {...describedBy(id('type'), false, notes(key('type')))}
          >
            <option value="">implement (default)</option>
            {Object.entries(TASK_TYPE_LABELS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </Field>
        <Field
          id={id('runner')}
          label="Runner"
          hint="None named: the roster routes it, else the configured default runner."
          notes={notes(key('runner'))}
        >
          <select
            id={id('runner')}
            value={task.runner}
            onChange={input('runner')}
            {...describedBy(id('runner'), true, notes(key('runner')))}
          >
            <option value="">roster / default runner</option>
            {runners.map((r) => {
              const why = unusable(r);
              return (
                <option key={r.key} value={r.key} disabled={why !== null}>
                  {r.key}
                  {r.label !== r.key ? ` — ${r.label}` : ''}
                  {why ? ` (${why})` : ''}
                </option>
              );
            })}
          </select>
        </Field>
        <Field
          id={id('model')}
          label="Model"
          hint={shell ? 'The shell runner uses no model.' : 'Optional; else the runner’s or the roster’s.'}
          notes={notes(key('model'))}
        >
          <input
            id={id('model')}
            type="text"
            list="form-models"
            value={task.model}
            autocomplete="off"
            disabled={shell}
            onInput={input('model')}
            {...describedBy(id('model'), true, notes(key('model')))}
          />
        </Field>
        {shell && (
          <Field
            id={id('command')}
            label="Command"
            hint="Optional: run this instead of the instruction (sh -c in the workspace)."
            notes={notes(key('command'))}
          >
            <input
              id={id('command')}
              type="text"
              class="mono"
              value={task.command}
              autocomplete="off"
              onInput={input('command')}
              {...describedBy(id('command'), true, notes(key('command')))}
            />
          </Field>
        )}
        <Field
          id={id('files')}
          label="Files"
          hint="Relative to the workspace; one a line or comma-separated."
          notes={notes(key('files'))}
        >
          <textarea
            id={id('files')}
            rows={2}
            class="mono"
            value={task.files}
            onInput={input('files')}
            {...describedBy(id('files'), true, notes(key('files')))}
          />
        </Field>
        <Field
          id={id('criteria')}
          label="Criteria"
          hint="What must be true when done; one a line (e.g. “tests pass”)."
          notes={notes(key('criteria'))}
        >
          <textarea
            id={id('criteria')}
            rows={2}
            value={task.criteria}
            onInput={input('criteria')}
            {...describedBy(id('criteria'), true, notes(key('criteria')))}
          />
        </Field>
      </div>
      <fieldset class="form-handoff">
        <legend>Done means, receipts and gates</legend>
        <div class="form-grid">
          <Field
            id={id('done_means')}
            label="Done means"
            hint="Checkable completion criteria, one a line: the worker confirms or fails each in its report."
            notes={notes(key('done_means'))}
          >
            <textarea
              id={id('done_means')}
              rows={2}
              value={task.doneMeans}
              onInput={input('doneMeans')}
              {...describedBy(id('done_means'), true, notes(key('done_means')))}
            />
          </Field>
          <Field
            id={id('receipts')}
            label="Receipts"
            hint="Evidence the task is real, one a line: a file:line, a log line, an issue link."
            notes={notes(key('receipts'))}
          >
            <textarea
              id={id('receipts')}
              rows={2}
              value={task.receipts}
              onInput={input('receipts')}
              {...describedBy(id('receipts'), true, notes(key('receipts')))}
            />
          </Field>
          <Field
            id={id('gates')}
            label="Gate commands"
            hint="Shell commands that must pass on the returned work, one a line (e.g. npm run lint)."
            notes={notes(key('gates'))}
          >
            <textarea
              id={id('gates')}
              rows={2}
              class="mono"
              value={task.gateCommands}
              onInput={input('gateCommands')}
              {...describedBy(id('gates'), true, notes(key('gates')))}
            />
          </Field>
          <Field
            id={id('gate-scope')}
            label="Diff scope gate"
            hint="Optional: the paths every change must stay inside, one a line or comma-separated."
          >
            <textarea
              id={id('gate-scope')}
              rows={2}
              class="mono"
              value={task.gateScope}
              onInput={input('gateScope')}
              {...describedBy(id('gate-scope'), true, [])}
            />
          </Field>
          <div class="form-field wide">
            <label class="form-check">
              <input
                type="checkbox"
                id={id('gate-claims')}
                checked={task.gateClaims}
                onChange={(e) => onChange({ gateClaims: e.currentTarget.checked })}
              />{' '}
              Check the worker's claims against what changed
            </label>
            <label class="form-check">
              <input
                type="checkbox"
                id={id('gate-done_means')}
                checked={task.gateDoneMeans}
                onChange={(e) => onChange({ gateDoneMeans: e.currentTarget.checked })}
              />{' '}
              Confirm each done-means item by a check that passed
            </label>
          </div>
        </div>
      </fieldset>
      {count > 1 && (
        <button type="button" class="danger" onClick={onRemove}>
          Remove task {index + 1}
        </button>
      )}
    </fieldset>
  );
}
