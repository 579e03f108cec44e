import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ModelMessage } from 'ai';

/** A builtin agent's conversation on disk: the resume handle of spec 03 ("Fix rounds" → Resume). */
export interface SavedSession {
  version: 1;
  runner: 'builtin';
  /** The worker that last continued it. */
  worker: string;
  /** The model selected when it was saved. */
  model: string;
  /** The conversation: user instructions, assistant turns, tool results (no system prompt). */
  messages: ModelMessage[];
}

/** Where a worker's session goes: `<worker>.session.json` beside its log, in the data dir. */
export function sessionPathFor(logFile: string, workerName: string): string {
  return join(dirname(logFile), `${workerName}.session.json`);
}

/** Loads a session saved by `saveSession`; a value, never a throw. */
export function loadSession(path: string): { ok: true; session: SavedSession } | { ok: false; why: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    return { ok: false, why: `cannot read the session ${path}: ${err instanceof Error ? err.message : String(err)}` };
  }
  const session = parsed as Partial<SavedSession> | null;
  if (session?.version !== 1 || session.runner !== 'builtin' || !Array.isArray(session.messages)) {
    return { ok: false, why: `${path} is not a builtin session (version 1)` };
  }
  return { ok: true, session: session as SavedSession };
}

/** Saves a session atomically (a half-written file would lose the conversation). */
export function saveSession(path: string, session: SavedSession): string | null {
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(`${path}.tmp`, JSON.stringify(session));
    renameSync(`${path}.tmp`, path);
    return null;
  } catch (err) {
    return `cannot save the session ${path}: ${err instanceof Error ? err.message : String(err)}`;
  }
}
