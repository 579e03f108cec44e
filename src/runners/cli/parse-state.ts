/** What an agent CLI's structured output said, gathered line by line (spec 04 "Agent CLIs"). */
export interface CliParse {
  /** The final answer text (the last assistant text when the CLI prints no final summary). */
  text: string | null;
  /** The session/thread id to resume. */
  session: string | null;
  /** The model the CLI says served (its init event or a response's model). */
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  /** Dollars, when the CLI reports a cost (claude; opencode's per step). */
  costUsd: number | null;
  /** The CLI's own verdict that the run failed (claude/qwen `is_error`, codex `turn.failed`, gemini `status: error`). */
  isError: boolean;
  /** The error message the CLI gave, when any. */
  error: string | null;
  /** The API's HTTP status, when the CLI's structured error carries one. */
  apiStatus: number | null;
  /** True when the structured error channel says the provider rate-limited the run. */
  rateLimited: boolean;
  /** Seconds until the limit resets, when the CLI passes it on. */
  retryAfterS: number | null;
  /** Model turns (claude/qwen `num_turns`, codex turns, opencode steps). */
  rounds: number;
  toolCalls: number;
  failedCalls: number;
  /** An assistant message is arriving in deltas (gemini): the next delta appends. */
  textOpen: boolean;
  /** True once the CLI's closing event (result / turn end) was read. */
  sawEnd: boolean;
}

/** Reads one output line (stdout or stderr) into the parse; lines that are not its JSON are ignored. */
export type CliParser = (line: string, into: CliParse) => void;

/** An empty parse. */
export function emptyParse(): CliParse {
  return {
    text: null,
    session: null,
    model: null,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: null,
    isError: false,
    error: null,
    apiStatus: null,
    rateLimited: false,
    retryAfterS: null,
    rounds: 0,
    toolCalls: 0,
    failedCalls: 0,
    textOpen: false,
    sawEnd: false,
  };
}

/** Parses every line of a recorded or finished output with `parser`. */
export function parseLines(parser: CliParser, lines: Iterable<string>): CliParse {
  const into = emptyParse();
  for (const line of lines) parser(line, into);
  return into;
}

/** The line as a JSON object, or null when it is not one (banners, stderr noise). */
export function jsonLine(line: string): Record<string, unknown> | null {
  const trimmed = line.trim();
  if (!trimmed.startsWith('{')) return null;
  try {
    const value: unknown = JSON.parse(trimmed);
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function str(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** An HTTP status of 429, or an error message/code that names a rate limit, read from a STRUCTURED error. */
export function isRateLimitError(status: number | null, code: string | null): boolean {
  if (status === 429) return true;
  return code !== null && /rate[_ ]?limit|resource[_ ]?exhausted|too[_ ]many[_ ]requests|usage[_ ]limit/i.test(code);
}
