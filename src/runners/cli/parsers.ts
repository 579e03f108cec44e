import { isRateLimitError, isRecord, jsonLine, num, str, type CliParse } from './parse-state.js';

/**
 * claude `--output-format stream-json --verbose`: `system/init` (session_id, model), `assistant`
 * (one content block each), `user` (tool results), `result` (result, is_error, api_error_status,
 * num_turns, total_cost_usd, usage).
 */
export function parseClaudeLine(line: string, into: CliParse): void {
  parseClaudeStyle(line, into, true);
}

/**
 * qwen `--output-format stream-json`: claude's shape, no cost. API errors exit 0 with
 * `is_error: false` and show only as `[API Error: …]` in the result text (spec 04), so that text
 * is read as the error channel.
 */
export function parseQwenLine(line: string, into: CliParse): void {
  parseClaudeStyle(line, into, false);
  if (into.sawEnd && !into.isError && into.text !== null) {
    const apiError = /\[API Error: ([^\]]*(?:\][^\]]*)*)\]/.exec(into.text);
    if (apiError !== null) {
      into.isError = true;
      into.error = `API error: ${apiError[1] ?? ''}`.trim();
      const status = /\b([45]\d\d)\b/.exec(apiError[1] ?? '');
      into.apiStatus ??= status === null ? null : Number(status[1]);
      into.rateLimited = isRateLimitError(into.apiStatus, null);
    }
  }
}

function parseClaudeStyle(line: string, into: CliParse, hasCost: boolean): void {
  const event = jsonLine(line);
  if (event === null) return;
  const type = str(event.type);
  into.session = str(event.session_id) ?? into.session;
  if (type === 'system' && event.subtype === 'init') {
    into.model = str(event.model) ?? into.model;
    return;
  }
  if (type === 'assistant' && isRecord(event.message)) {
    const message = event.message;
    // the response's own model is the served one; the init event only echoes what was asked
    into.model = str(message.model) ?? into.model;
    for (const block of Array.isArray(message.content) ? message.content : []) {
      if (!isRecord(block)) continue;
      if (block.type === 'tool_use') into.toolCalls++;
      if (block.type === 'text' && str(block.text) !== null) into.text = str(block.text);
    }
    return;
  }
  if (type === 'user' && isRecord(event.message)) {
    for (const block of Array.isArray(event.message.content) ? event.message.content : []) {
      if (isRecord(block) && block.type === 'tool_result' && block.is_error === true) into.failedCalls++;
    }
    return;
  }
  if (type === 'result') {
    into.sawEnd = true;
    into.text = str(event.result) ?? into.text;
    into.isError = event.is_error === true || (str(event.subtype) ?? 'success') !== 'success';
    into.rounds = num(event.num_turns) ?? into.rounds;
    const status = num(event.api_error_status);
    if (status !== null) into.apiStatus = status;
    if (into.isError)
      into.error =
        str(event.result) ??
        (Array.isArray(event.errors) ? event.errors.map(String).join('; ') : null) ??
        str(event.subtype);
    into.rateLimited = into.isError && isRateLimitError(into.apiStatus, null);
    if (isRecord(event.usage)) {
      into.inputTokens =
        (num(event.usage.input_tokens) ?? 0) +
        (num(event.usage.cache_read_input_tokens) ?? 0) +
        (num(event.usage.cache_creation_input_tokens) ?? 0);
      into.outputTokens = num(event.usage.output_tokens) ?? 0;
    }
    if (hasCost) into.costUsd = num(event.total_cost_usd) ?? into.costUsd;
    if (isRecord(event.modelUsage)) {
      const models = Object.keys(event.modelUsage);
      if (into.model === null && models.length === 1) into.model = models[0] ?? null;
    }
  }
}

/**
 * codex `exec --json`: `thread.started{thread_id}`, `item.*` (`agent_message`, `file_change`,
 * `command_execution`, `error`), `turn.completed{usage}`, `turn.failed{error}`, `error`. Model and
 * session also appear in codex's stderr header (`model: …`, `session id: …`).
 */
export function parseCodexLine(line: string, into: CliParse): void {
  const event = jsonLine(line);
  if (event === null) {
    const header = /^\s*(model|session id):\s*(\S+)\s*$/i.exec(line);
    if (header?.[1]?.toLowerCase() === 'model') into.model ??= header[2] ?? null;
    if (header?.[1]?.toLowerCase() === 'session id') into.session ??= header[2] ?? null;
    return;
  }
  const type = str(event.type);
  if (type === 'thread.started') into.session = str(event.thread_id) ?? into.session;
  if (type === 'turn.started') into.rounds++;
  if ((type === 'item.completed' || type === 'item.started') && isRecord(event.item)) {
    const item = event.item;
    if (type === 'item.completed') {
      if (item.type === 'agent_message') into.text = str(item.text) ?? into.text;
      if (item.type === 'command_execution' || item.type === 'file_change' || item.type === 'mcp_tool_call') {
        into.toolCalls++;
        if (item.status === 'failed' || (num(item.exit_code) ?? 0) !== 0) into.failedCalls++;
      }
    }
    if (item.type === 'error') into.error = str(item.message) ?? into.error;
  }
  if (type === 'turn.completed') {
    into.sawEnd = true;
    if (isRecord(event.usage)) {
      into.inputTokens += num(event.usage.input_tokens) ?? 0;
      into.outputTokens += num(event.usage.output_tokens) ?? 0;
    }
  }
  if (type === 'turn.failed' || type === 'error') {
    into.sawEnd ||= type === 'turn.failed';
    into.isError = true;
    const message = isRecord(event.error) ? str(event.error.message) : str(event.message);
    into.error = message ?? into.error;
    readCodexStatus(message, into);
  }
}

function readCodexStatus(message: string | null, into: CliParse): void {
  if (message === null) return;
  // codex puts the provider's HTTP status into its structured error's message: "unexpected status 429 Too Many Requests: …"
  const status = /\bstatus[: ]+(\d{3})\b/i.exec(message) ?? /\b(429)\b/.exec(message);
  if (status !== null) into.apiStatus = Number(status[1]);
  if (isRateLimitError(into.apiStatus, null) || /usage limit|rate limit/i.test(message)) into.rateLimited = true;
  const retry = /try again in (\d+(?:\.\d+)?)\s*(s|sec|seconds|m|min|minutes)\b/i.exec(message);
  if (retry !== null) into.retryAfterS = Math.ceil(Number(retry[1]) * (/^m/i.test(retry[2] ?? '') ? 60 : 1));
}

/**
 * gemini `--output-format stream-json`: `init{session_id, model}`, `message` (assistant text in
 * deltas), `tool_use`, `tool_result{status}`, `error`, `result{status, error, stats}`.
 */
export function parseGeminiLine(line: string, into: CliParse): void {
  const event = jsonLine(line);
  if (event === null) return;
  const type = str(event.type);
  if (type === 'init') {
    into.session = str(event.session_id) ?? into.session;
    into.model = str(event.model) ?? into.model;
  }
  if (type === 'message' && event.role === 'assistant') {
    const content = typeof event.content === 'string' ? event.content : '';
    into.text = event.delta === true && into.textOpen ? `${into.text ?? ''}${content}` : content;
    into.textOpen = true;
  }
  if (type === 'tool_use') {
    into.textOpen = false;
    into.toolCalls++;
    into.rounds++;
  }
  if (type === 'tool_result' && event.status === 'error') into.failedCalls++;
  if (type === 'error') into.error = str(event.message) ?? into.error;
  if (type === 'result') {
    into.sawEnd = true;
    into.isError = event.status !== 'success';
    if (isRecord(event.error)) {
      into.error = str(event.error.message) ?? into.error;
      readGeminiStatus(event.error, into);
    }
    if (isRecord(event.stats)) {
      into.inputTokens = num(event.stats.input_tokens) ?? num(event.stats.input) ?? into.inputTokens;
      into.outputTokens = num(event.stats.output_tokens) ?? num(event.stats.output) ?? into.outputTokens;
      // the models that actually answered; init's `model` only echoes what was asked
      const served = isRecord(event.stats.models) ? Object.keys(event.stats.models) : [];
      if (served.length === 1) into.model = served[0] ?? into.model;
    }
  }
}

function readGeminiStatus(error: Record<string, unknown>, into: CliParse): void {
  const code = num(error.code) ?? num(error.status);
  if (code !== null && code >= 100 && code < 600) into.apiStatus = code;
  const message = str(error.message) ?? '';
  if (into.apiStatus === null) {
    const status = /\b(?:status|code)[": ]+(\d{3})\b/i.exec(message) ?? /\[(\d{3})\b/.exec(message);
    if (status !== null) into.apiStatus = Number(status[1]);
  }
  into.rateLimited = isRateLimitError(into.apiStatus, str(error.type));
  const retry = /retry after (\d+(?:\.\d+)?)s\b/i.exec(message);
  if (retry !== null) into.retryAfterS = Math.ceil(Number(retry[1]));
}

/**
 * opencode `run --format json`: every event carries `sessionID`; `step_start`, `tool_use`,
 * `text`, `step_finish{tokens, cost}`, `error{error:{name, data:{message, statusCode}}}`. No final
 * summary (the last text part stands in) and no model.
 */
export function parseOpencodeLine(line: string, into: CliParse): void {
  const event = jsonLine(line);
  if (event === null) return;
  into.session = str(event.sessionID) ?? into.session;
  const type = str(event.type);
  const part = isRecord(event.part) ? event.part : {};
  if (type === 'step_start') into.rounds++;
  if (type === 'text') into.text = str(part.text) ?? into.text;
  if (type === 'tool_use') {
    into.toolCalls++;
    if (isRecord(part.state) && part.state.status === 'error') into.failedCalls++;
  }
  if (type === 'step_finish') {
    into.sawEnd = true;
    if (isRecord(part.tokens)) {
      into.inputTokens += num(part.tokens.input) ?? 0;
      into.outputTokens += num(part.tokens.output) ?? 0;
    }
    const cost = num(part.cost);
    if (cost !== null) into.costUsd = (into.costUsd ?? 0) + cost;
  }
  if (type === 'error') {
    into.isError = true;
    const error = isRecord(event.error) ? event.error : {};
    const data = isRecord(error.data) ? error.data : {};
    into.error = str(data.message) ?? str(error.name) ?? 'opencode reported an error';
    into.apiStatus = num(data.statusCode) ?? into.apiStatus;
    into.rateLimited = isRateLimitError(into.apiStatus, null);
  }
}
