import { closeSync, constants, lstatSync, mkdirSync, openSync, readdirSync, statSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readBounded } from '../../platform/files/bounded-read.js';
import { asUser } from '../../platform/process/umask.js';
import { failed, refused, type ToolContext, type ToolOutcome } from './tool-context.js';
import { isInside, realPathOf, resolveInWorkspace } from './workspace-paths.js';
import { checkWrite } from './write-scope.js';

const READ_MAX_BYTES = 256 * 1024;
const LIST_MAX_ENTRIES = 1000;
const GREP_MAX_MATCHES = 200;
const GREP_MAX_FILE_BYTES = 1024 * 1024;
/** Most bytes a read in parts or an edit loads. */
const TEXT_MAX_BYTES = 64 * 1024 * 1024;
const GREP_LINE_CHARS = 300;
/** Not walked by list_files (recursive) and grep: noise, or gaffer's and git's own. */
const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

/**
 * A workspace file's text for the tools, which run in gaffer's own process: a FIFO, device or socket
 * (the agent's own command could have made one) is refused, never waited on, and the size is capped.
 */
function readToolText(abs: string): string {
  const read = readBounded(abs, { maxBytes: TEXT_MAX_BYTES });
  if (read.ok) return read.bytes.toString('utf8');
  throw Object.assign(new Error(read.why), { code: read.missing ? 'ENOENT' : 'EREFUSED' });
}

function messageOf(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return 'no such file or directory';
  if (e.code === 'EISDIR') return 'is a directory';
  if (e.code === 'ENOTDIR') return 'a part of the path is not a directory';
  return err instanceof Error ? err.message : String(err);
}

/** `read_file`: a file's text, optionally a line range (1-based, inclusive). */
export function readFileTool(
  ctx: ToolContext,
  args: { path: string; start_line?: number | undefined; end_line?: number | undefined },
): ToolOutcome {
  const at = resolveInWorkspace(ctx.root, args.path);
  if (!at.ok) return refused(at.why);
  let text: string;
  try {
    if (statSync(at.abs).size > READ_MAX_BYTES && args.start_line === undefined) {
      return failed(
        `${at.rel} is larger than ${READ_MAX_BYTES} bytes; read it in parts with start_line/end_line, or grep it`,
      );
    }
    text = readToolText(at.abs);
  } catch (err) {
    return failed(`${args.path}: ${messageOf(err)}`);
  }
  if (args.start_line === undefined && args.end_line === undefined)
    return { status: 'ok', text: text === '' ? '(empty file)' : text };
  const lines = text.split('\n');
  const from = Math.max(1, args.start_line ?? 1);
  const to = Math.min(lines.length, args.end_line ?? lines.length);
  return {
    status: 'ok',
    text:
      lines.slice(from - 1, to).join('\n') +
      (to < lines.length ? `\n[… lines ${to + 1}-${lines.length} not shown]` : ''),
  };
}

/** Scope and lock checks before a write; null when the write may go ahead. */
function checkBeforeWrite(ctx: ToolContext, requested: string): { abs: string; rel: string } | ToolOutcome {
  const at = resolveInWorkspace(ctx.root, requested);
  if (!at.ok) return refused(at.why);
  const scope = checkWrite(ctx.scope, at.rel);
  if (!scope.ok) return refused(scope.why);
  const lock = ctx.locks.acquire(at.abs, ctx.holder);
  if (!lock.ok) {
    return refused(`lock held by ${lock.holder}`, {
      isLockConflict: true,
      told: `${at.rel} is being edited by another worker (lock held by ${lock.holder}); leave this file to it`,
    });
  }
  return { abs: at.abs, rel: at.rel };
}

/** Writes without following a symlink in the last component (it was resolved and checked). */
function writeNoFollow(abs: string, content: string): void {
  asUser(() => writeNoFollowAsUser(abs, content)); // the workspace gets the user's file modes, not gaffer's umask 077
}

function writeNoFollowAsUser(abs: string, content: string): void {
  mkdirSync(dirname(abs), { recursive: true });
  const parent = realPathOf(dirname(abs));
  if (parent === null || dirname(abs) !== parent) throw new Error('the directory changed while writing');
  const fd = openSync(abs, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
  try {
    const bytes = Buffer.from(content, 'utf8');
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
  } finally {
    closeSync(fd);
  }
}

/** `write_file`: creates or replaces a file (parents made). */
export function writeFileTool(ctx: ToolContext, args: { path: string; content: string }): ToolOutcome {
  const target = checkBeforeWrite(ctx, args.path);
  if ('status' in target) return target;
  try {
    writeNoFollow(target.abs, args.content);
  } catch (err) {
    return failed(`${args.path}: ${messageOf(err)}`);
  }
  return { status: 'ok', text: `wrote ${Buffer.byteLength(args.content)} bytes to ${target.rel}`, wrote: target.rel };
}

function countOccurrences(text: string, search: string): number {
  let count = 0;
  for (let at = text.indexOf(search); at !== -1; at = text.indexOf(search, at + search.length)) count++;
  return count;
}

/** `edit_file`: replaces one exact, unique occurrence of `old_text` with `new_text`. */
export function editFileTool(
  ctx: ToolContext,
  args: { path: string; old_text: string; new_text: string },
): ToolOutcome {
  if (args.old_text === '')
    return failed('old_text is empty; give the exact text to replace (or use write_file for a new file)');
  const target = checkBeforeWrite(ctx, args.path);
  if ('status' in target) return target;
  let text: string;
  try {
    text = readToolText(target.abs);
  } catch (err) {
    return failed(`${args.path}: ${messageOf(err)}`);
  }
  const count = countOccurrences(text, args.old_text);
  if (count === 0)
    return failed(
      `old_text was not found in ${target.rel}; read the file and copy the text exactly (whitespace included)`,
    );
  if (count > 1)
    return failed(`old_text appears ${count} times in ${target.rel}; include more surrounding lines so it is unique`);
  const at = text.indexOf(args.old_text);
  try {
    writeNoFollow(target.abs, text.slice(0, at) + args.new_text + text.slice(at + args.old_text.length));
  } catch (err) {
    return failed(`${args.path}: ${messageOf(err)}`);
  }
  return { status: 'ok', text: `edited ${target.rel}`, wrote: target.rel };
}

/** Walks `dir` (real path inside root), yielding workspace-relative file and directory paths. */
function* walk(
  ctx: ToolContext,
  dir: string,
  rel: string,
  recursive: boolean,
): Generator<{ rel: string; abs: string; isDir: boolean }> {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return;
  }
  for (const name of names) {
    const abs = join(dir, name);
    const childRel = rel === '.' ? name : `${rel}/${name}`;
    let isDir: boolean;
    try {
      const stat = lstatSync(abs);
      if (stat.isSymbolicLink()) {
        const real = realPathOf(abs);
        // a link out of the workspace is not followed; a link to a directory is not walked (no loops)
        if (real === null || !isInside(ctx.root, real)) continue;
        isDir = statSync(real).isDirectory();
        yield { rel: childRel, abs: real, isDir };
        continue;
      }
      isDir = stat.isDirectory();
    } catch {
      continue;
    }
    yield { rel: childRel, abs, isDir };
    if (isDir && recursive && !SKIPPED_DIRS.has(name)) yield* walk(ctx, abs, childRel, recursive);
  }
}

/** `list_files`: a directory's entries (directories end in `/`), recursive on request. */
export function listFilesTool(
  ctx: ToolContext,
  args: { path?: string | undefined; recursive?: boolean | undefined },
): ToolOutcome {
  const at = resolveInWorkspace(ctx.root, args.path ?? '.');
  if (!at.ok) return refused(at.why);
  try {
    if (!statSync(at.abs).isDirectory()) return failed(`${at.rel} is not a directory`);
  } catch (err) {
    return failed(`${args.path ?? '.'}: ${messageOf(err)}`);
  }
  const lines: string[] = [];
  for (const entry of walk(ctx, at.abs, at.rel, args.recursive === true)) {
    if (lines.length >= LIST_MAX_ENTRIES) {
      lines.push(`[… more entries not shown; list a subdirectory]`);
      break;
    }
    lines.push(entry.isDir ? `${entry.rel}/` : entry.rel);
  }
  return { status: 'ok', text: lines.length === 0 ? '(empty directory)' : lines.join('\n') };
}

/** `grep`: lines matching a regular expression in the files under a path. */
export function grepTool(
  ctx: ToolContext,
  args: { pattern: string; path?: string | undefined; ignore_case?: boolean | undefined },
): ToolOutcome {
  let regex: RegExp;
  try {
    regex = new RegExp(args.pattern, args.ignore_case === true ? 'i' : '');
  } catch (err) {
    return failed(`not a valid regular expression: ${messageOf(err)}`);
  }
  const at = resolveInWorkspace(ctx.root, args.path ?? '.');
  if (!at.ok) return refused(at.why);
  let files: { rel: string; abs: string }[];
  try {
    files = statSync(at.abs).isDirectory()
      ? [...walk(ctx, at.abs, at.rel, true)].filter((e) => !e.isDir)
      : [{ rel: at.rel, abs: at.abs }];
  } catch (err) {
    return failed(`${args.path ?? '.'}: ${messageOf(err)}`);
  }
  const matches: string[] = [];
  for (const file of files) {
    let text: string;
    try {
      if (statSync(file.abs).size > GREP_MAX_FILE_BYTES) continue;
      const read = readBounded(file.abs, { maxBytes: GREP_MAX_FILE_BYTES });
      if (!read.ok) continue;
      const bytes = read.bytes;
      if (bytes.subarray(0, 8000).includes(0)) continue; // binary
      text = bytes.toString('utf8');
    } catch {
      continue;
    }
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as string;
      if (!regex.test(line)) continue;
      matches.push(
        `${file.rel}:${i + 1}: ${line.length > GREP_LINE_CHARS ? `${line.slice(0, GREP_LINE_CHARS)}…` : line}`,
      );
      if (matches.length >= GREP_MAX_MATCHES)
        return {
          status: 'ok',
          text: `${matches.join('\n')}\n[… stopped at ${GREP_MAX_MATCHES} matches; narrow the pattern or path]`,
        };
    }
  }
  return { status: 'ok', text: matches.length === 0 ? 'no matches' : matches.join('\n') };
}
