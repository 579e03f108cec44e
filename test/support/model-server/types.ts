// The vocabulary of the scripted model server: what a test writes (turns) and what it reads back (requests).

/** The wire protocol a request arrived on. */
export type ApiKind = 'anthropic' | 'chat' | 'responses' | 'gemini';

/** A tool result the client sent back, whatever the API called it. */
export interface ToolResult {
  /** The call id the result answers (`tool_use_id`, `tool_call_id`, `call_id`, gemini's optional `id`). */
  callId?: string;
  /** The tool's name, where the API carries it (gemini's `functionResponse.name`). */
  name?: string;
  /** The result as text (JSON for gemini's `response` object). */
  output: string;
  /** Anthropic's `is_error` flag. */
  isError?: boolean;
}

/** How a recorded request was answered. */
export type AnsweredBy = 'turn' | 'auto' | 'exhausted' | 'invalid';

/** One model request, as the server received it, with an API-independent view for predicates. */
export interface ModelRequest {
  /** 0-based order of arrival among model requests. */
  index: number;
  api: ApiKind;
  method: string;
  /** The path without the query string. */
  path: string;
  query: Record<string, string>;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The raw wire JSON, exactly as the client sent it (the shape differs per API). */
  body: Record<string, any>;
  /** The model asked for (the body's `model`, or gemini's path segment). */
  model: string;
  /** Whether the client asked for a streamed (SSE) answer. */
  stream: boolean;
  /** All system text joined with newlines: `system`, `instructions`, `systemInstruction`, and `system`/`developer` messages wherever they sit. */
  system: string;
  /** Names of the tools the client offered. */
  toolNames: string[];
  hasTools: boolean;
  /** Number of conversation messages/items, system ones excluded. */
  messageCount: number;
  /** Role of the last conversation message; `tool` when it carries tool results. */
  lastRole: 'user' | 'assistant' | 'tool' | undefined;
  /** Text of the last conversation message. */
  lastText: string;
  /** Tool results in the last message (or trailing tool messages/items). */
  toolResults: ToolResult[];
  /** The last message is tool results: the client is continuing after a tool call. */
  isToolResult: boolean;
  /** The client asked for JSON output (a response schema or JSON mode). */
  wantsJson: boolean;
  /** The JSON schema it asked for, when it gave one. */
  jsonSchema: unknown;
  /** How it was answered; set once the server decided. */
  answeredBy?: AnsweredBy;
  /** Index of the scripted turn that answered it (position in the last `script()` call). */
  turn?: number;
  /** HTTP status sent (0 when the connection was dropped without an answer). */
  status?: number;
}

/** A tool call the scripted model makes. The server knows no tool names: the test names the client's tool. */
export interface ToolCallSpec {
  name: string;
  /** Arguments: an object (sent as JSON), or a raw string (sent verbatim, e.g. malformed JSON or a custom tool's free-form input). */
  args?: Record<string, unknown> | string;
  /** Override the generated call id. */
  id?: string;
}

/** An HTTP error answer. */
export interface ErrorSpec {
  status: number;
  /** Extra response headers, e.g. `retry-after`, `anthropic-ratelimit-requests-reset`, `x-ratelimit-reset-requests`. */
  headers?: Record<string, string>;
  /** The body; by default the API's own error shape carrying `message`. A string is sent verbatim. */
  body?: unknown;
  message?: string;
}

/** Fields any answering turn may carry. */
export interface TurnBase {
  /** Only answer a request this accepts; other requests go to later turns. */
  when?: (request: ModelRequest) => boolean;
  /** Answer as this model instead of the one asked for (a substitution). */
  model?: string;
  /** Override the estimated token counts. */
  usage?: { input?: number; output?: number };
  /** Milliseconds between streamed frames (default 0). */
  pace?: number;
}

export interface ReplyTurn extends TurnBase {
  text?: string;
  toolCalls?: ToolCallSpec[];
}

export interface ErrorTurn extends TurnBase {
  error: ErrorSpec;
}

/** Accept the request and send nothing for `stall` ms; then answer with `then`, or drop the connection. */
export interface StallTurn extends TurnBase {
  stall: number;
  /** Send the response headers and the stream's first event before stalling (a model that hangs mid-stream). */
  midStream?: boolean;
  then?: Turn;
}

/** Answer as a side request would be answered (short text, or JSON matching the asked schema). */
export interface AutoTurn extends TurnBase {
  auto: true;
}

/** A dynamic turn with a predicate: `reply` builds the turn from the request. */
export interface DynamicTurn extends TurnBase {
  reply: (request: ModelRequest) => Turn;
}

export type Turn = ReplyTurn | ErrorTurn | StallTurn | AutoTurn | DynamicTurn;

/** One script entry: a turn, or a function that builds one from the request. */
export type ScriptStep = Turn | ((request: ModelRequest) => Turn);

/** How side requests (titles, classifiers) are answered without consuming scripted turns. */
export interface AutoOptions {
  /** Which requests are side requests; default: those offering no tools. */
  when?: (request: ModelRequest) => boolean;
  /** The text for a side request that does not want JSON; default "Scripted session". */
  text?: string;
}

export interface ScriptOptions {
  /** Answer side requests automatically: a short text, or JSON built from the schema the request asks for. */
  auto?: boolean | AutoOptions;
}
