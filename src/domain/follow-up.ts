// Review that feeds back (issue 16): line comments and a note on a finished task, sent back to it as a new job.
import { GafferError } from './errors.js';

/** One comment on a line of the task's work. */
export interface FollowUpComment {
  /** Workspace-relative path. */
  file: string;
  /** 1-based line number. */
  line: number;
  text: string;
}

/** A follow-up request: at least one comment or a note. */
export interface FollowUpRequest {
  comments: FollowUpComment[];
  note: string | null;
}

/** What a follow-up job records of where it came from (`spec.follow_up`, the answer's `follow_up`). */
export interface FollowUpLink {
  /** The job whose task this follows up. */
  job: string;
  task: string;
  /** The first attempt resumes the task's last session (else it starts a new one, told the diff). */
  resumed: boolean;
}

/**
 * Where a follow-up of a worktree job's task starts (`spec.follow_up_base`): that task's branch, not
 * the workspace — the worker sees its own work, and the follow-up's evidence is what it changed on top.
 */
export interface FollowUpBase {
  /** The followed task's branch: `gaffer/<job>/<task>`, or the merged tree's for a review task that ran there. */
  branch: string;
  /** The branch's tip when the follow-up was asked for: the follow-up's base commit, where the comments' lines were read. */
  commit: string;
}

export const FOLLOW_UP_LIMITS = { comments: 100, text: 4_000, note: 8_000, file: 1_000, diffBytes: 8_192 } as const;

const bad = (field: string, message: string): GafferError =>
  new GafferError('invalid_request', `${field}: ${message}`, field);

/** Validates a follow-up body; refuses any field but `comments` and `note` (the session to resume comes from the store). */
export function parseFollowUpBody(body: unknown): FollowUpRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw bad('body', `must be a JSON object {"comments": [...], "note": "..."}, got ${JSON.stringify(body)}`);
  const record = body as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key !== 'comments' && key !== 'note')
      throw bad(
        key,
        `is not a follow-up field (only "comments" and "note"; the session and route come from the finished job) — remove it`,
      );
  }
  const raw = record.comments ?? [];
  if (!Array.isArray(raw))
    throw bad('comments', `must be an array of {"file", "line", "text"}, got ${JSON.stringify(raw)}`);
  if (raw.length > FOLLOW_UP_LIMITS.comments)
    throw bad(
      'comments',
      `at most ${FOLLOW_UP_LIMITS.comments} comments, got ${raw.length} — put the rest in the note`,
    );
  const comments = raw.map((c: unknown, i) => parseComment(c, `comments[${i}]`));
  const note = record.note ?? null;
  if (note !== null && (typeof note !== 'string' || note.trim() === '' || note.length > FOLLOW_UP_LIMITS.note)) {
    throw bad(
      'note',
      `must be a non-empty string of at most ${FOLLOW_UP_LIMITS.note} characters, got ${typeof note === 'string' ? `${note.length} characters` : JSON.stringify(note)}`,
    );
  }
  if (comments.length === 0 && note === null)
    throw bad(
      'comments',
      'a follow-up needs at least one comment or a note — add {"file", "line", "text"} to comments or give "note"',
    );
  return { comments, note };
}

function parseComment(value: unknown, at: string): FollowUpComment {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw bad(at, `must be {"file": "src/a.ts", "line": 12, "text": "..."}, got ${JSON.stringify(value)}`);
  const c = value as Record<string, unknown>;
  for (const key of Object.keys(c)) {
    if (key !== 'file' && key !== 'line' && key !== 'text')
      throw bad(`${at}.${key}`, 'is not a comment field (file, line, text) — remove it');
  }
  if (typeof c.file !== 'string' || c.file === '' || c.file.length > FOLLOW_UP_LIMITS.file)
    throw bad(`${at}.file`, `must be a workspace-relative path, got ${JSON.stringify(c.file)}`);
  if (typeof c.line !== 'number' || !Number.isInteger(c.line) || c.line < 1)
    throw bad(`${at}.line`, `must be a line number from 1, got ${JSON.stringify(c.line)}`);
  if (typeof c.text !== 'string' || c.text.trim() === '' || c.text.length > FOLLOW_UP_LIMITS.text) {
    throw bad(
      `${at}.text`,
      `must be a non-empty string of at most ${FOLLOW_UP_LIMITS.text} characters, got ${typeof c.text === 'string' ? `${c.text.length} characters` : JSON.stringify(c.text)}`,
    );
  }
  return { file: c.file, line: c.line, text: c.text };
}

/** The commented line of `text` (a file's content), cut at 400 characters; a line past its end is refused. */
export function lineAt(text: string, comment: FollowUpComment, at: string): string {
  const lines = text.split('\n');
  if (text.endsWith('\n')) lines.pop();
  const line = lines[comment.line - 1];
  if (line === undefined)
    throw bad(`${at}.line`, `${comment.file} has ${lines.length} line(s), got line ${comment.line}`);
  return line.length > 400 ? `${line.slice(0, 400)}…` : line;
}

/** Parses a CLI `--comment file:line:text` (the text may hold colons). */
export function parseCommentFlag(flag: string): FollowUpComment {
  const m = /^(.+?):(\d+):([\s\S]+)$/.exec(flag);
  if (!m)
    throw bad('--comment', `must be file:line:text (e.g. src/a.ts:12:use a Map here), got ${JSON.stringify(flag)}`);
  return { file: m[1] as string, line: Number(m[2]), text: m[3] as string };
}

/** The follow-up task's instruction: the original one, each comment with the line it is on as it reads now, the note, and the diff when the session is not resumed. */
export function buildFollowUpInstruction(input: {
  original: string;
  comments: readonly (FollowUpComment & { current: string })[];
  note: string | null;
  /** The task's diff against its checkpoint; null when the session is resumed (it has seen its work). */
  diff: string | null;
}): string {
  const parts = [
    input.original,
    '',
    '## Review of your work',
    'A reviewer read what this task changed and asks for the following. Address every point; change nothing else.',
  ];
  if (input.comments.length > 0) {
    parts.push('', '### Comments on lines');
    for (const c of input.comments)
      parts.push(`- ${c.file}:${c.line}: ${c.text}`, `  (line ${c.line} now reads: ${JSON.stringify(c.current)})`);
  }
  if (input.note !== null) parts.push('', '### Note', input.note);
  if (input.diff !== null)
    parts.push('', '### What the task changed (diff against its checkpoint)', '```diff', input.diff, '```');
  return parts.join('\n');
}
