import { CappedLog, type CappedLogOptions, type CappedLogSummary } from '../../platform/process/capped-log.js';

const ARGS_CHARS = 300;
const RESULT_CHARS = 300;

/** Shortens one value for a transcript line (newlines shown as ⏎). */
export function clipForLine(text: string, max: number): string {
  const flat = text.replace(/\r?\n/g, ' ⏎ ');
  return flat.length > max ? `${flat.slice(0, max)}… (${flat.length} chars)` : flat;
}

/**
 * The builtin agent's readable transcript: one line per round, tool call, tool result and line
 * of model text, to `onOutput` (the board, state events) and to the capped log (spec 04).
 */
export class Transcript {
  readonly #log: CappedLog;
  readonly #onOutput: ((lines: string[]) => void) | undefined;

  constructor(logFile: string, onOutput: ((lines: string[]) => void) | undefined, opts: CappedLogOptions = {}) {
    this.#log = new CappedLog(logFile, opts);
    this.#onOutput = onOutput;
  }

  /** Writes lines as they are. */
  lines(lines: string[]): void {
    if (lines.length === 0) return;
    this.#log.write(Buffer.from(`${lines.join('\n')}\n`));
    try {
      this.#onOutput?.(lines);
    } catch {
      // a listener's failure must not stop the worker (run-process does the same)
    }
  }

  /** `[round 2] model qwen3:8b` */
  round(n: number, model: string): void {
    this.lines([`[round ${n}] ${model}`]);
  }

  /** `[tool] write_file {"path":"a.txt",…}` */
  toolCall(name: string, args: unknown): void {
    this.lines([`[tool] ${name} ${clipForLine(JSON.stringify(args) ?? '', ARGS_CHARS)}`]);
  }

  /** `[tool] write_file → ok: wrote 5 bytes to a.txt` */
  toolResult(name: string, status: string, text: string): void {
    this.lines([`[tool] ${name} → ${status}: ${clipForLine(text, RESULT_CHARS)}`]);
  }

  /** The model's words, one line each. */
  modelText(text: string): void {
    const lines =
      text.trim() === ''
        ? []
        : text
            .trimEnd()
            .split(/\r?\n/)
            .map((l) => `[model] ${l}`);
    this.lines(lines);
  }

  /** A command's own output lines, indented. */
  commandOutput(lines: string[]): void {
    this.lines(lines.map((l) => `  | ${l}`));
  }

  /** Closes the log; idempotent. */
  close(): CappedLogSummary {
    return this.#log.close();
  }
}
