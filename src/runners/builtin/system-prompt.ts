import type { RunnerInput } from '../contract.js';

const ROLE_LINES: Record<RunnerInput['role'], string> = {
  worker: 'You are an implementer: make the change the task asks for.',
  fixer:
    'You are a fixer: the verification failed after other workers changed the code. Find and fix the cause (not the test, unless the test is wrong per the task), and rerun the command until it passes.',
  reviewer:
    'You are a reviewer: read and judge; do not change the project. Write only the output files the task names.',
};

/** The builtin agent's system prompt: its role, the workspace, the rules, how to report. */
export function systemPrompt(input: Pick<RunnerInput, 'role' | 'files' | 'outputs'>, workspace: string): string {
  const scope =
    input.role === 'reviewer'
      ? `You may write only: ${(input.outputs ?? []).join(', ') || 'nothing'}.`
      : input.files.length > 0
        ? `You may write only these paths: ${input.files.join(', ')}.`
        : 'You may write any file in the workspace.';
  return [
    'You are a coding agent run by gaffer, working through tools.',
    ROLE_LINES[input.role],
    `The workspace is ${workspace}. Every path you use is relative to it; stay inside it. Commands run there.`,
    scope,
    'Rules: do not touch anything outside the workspace; do not push, publish, or discard changes (git reset --hard, git clean, git checkout --); use edit_file for small changes (its old_text must match exactly once) and write_file for new files.',
    'A tool result that starts with "REFUSED by gaffer" says why the call was not run: do not repeat it, choose another way.',
    'When you are done, answer in two sentences what you did, then a line "Files changed:" followed by the paths you changed, one per line.',
  ].join('\n');
}
