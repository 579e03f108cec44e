// Anthropic Messages API: POST /v1/messages, streamed as message_start … message_stop.
import type { Answer, ApiAdapter, RenderContext, RequestView } from '../adapter.js';
import type { Frame } from '../sse.js';
import { isRecord, splitChunks, textOf } from '../text.js';
import type { ToolResult } from '../types.js';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function inspect(body: Record<string, any>): RequestView {
  const system = [textOf(body.system)];
  const conversation: Record<string, any>[] = [];
  // claude puts role:"system" items in the middle of messages
  for (const message of Array.isArray(body.messages) ? body.messages : []) {
    if (!isRecord(message)) continue;
    if (message.role === 'system') system.push(textOf(message.content));
    else conversation.push(message);
  }
  const last = conversation.at(-1);
  const blocks: unknown[] = Array.isArray(last?.content) ? last.content : [];
  const toolResults: ToolResult[] = blocks
    .filter(isRecord)
    .filter((b) => b.type === 'tool_result')
    .map((b) => ({
      callId: typeof b.tool_use_id === 'string' ? b.tool_use_id : undefined,
      output: textOf(b.content),
      isError: b.is_error === true,
    }));
  const format = isRecord(body.output_format)
    ? body.output_format
    : isRecord(body.output_config?.format)
      ? body.output_config.format
      : undefined;
  const wantsJson = format?.type === 'json_schema';
  return {
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    system: system.filter(Boolean).join('\n'),
    toolNames: toolNamesOf(body.tools),
    messageCount: conversation.length,
    lastRole: toolResults.length > 0 ? 'tool' : last?.role === 'assistant' ? 'assistant' : last ? 'user' : undefined,
    lastText: last
      ? textOf(blocks.length > 0 ? blocks.filter((b) => isRecord(b) && b.type === 'text') : last.content)
      : '',
    toolResults,
    wantsJson,
    jsonSchema: wantsJson ? format?.schema : undefined,
  };
}

function toolNamesOf(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools
    .filter(isRecord)
    .map((t) => t.name)
    .filter((name): name is string => typeof name === 'string');
}

interface Block {
  block: Record<string, unknown>;
  deltas: Record<string, unknown>[];
}

function blocksOf(answer: Answer, ctx: RenderContext): Block[] {
  const blocks: Block[] = [];
  if (answer.text !== '' || answer.toolCalls.length === 0) {
    blocks.push({
      block: { type: 'text', text: answer.text },
      deltas: splitChunks(answer.text).map((text) => ({ type: 'text_delta', text })),
    });
  }
  for (const call of answer.toolCalls) {
    blocks.push({
      block: { type: 'tool_use', id: call.id ?? ctx.newId('toolu_01'), name: call.name, input: call.args },
      deltas: splitChunks(call.arguments).map((partial_json) => ({ type: 'input_json_delta', partial_json })),
    });
  }
  return blocks;
}

function usage(answer: Answer): Record<string, unknown> {
  return {
    input_tokens: answer.inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: answer.outputTokens,
    service_tier: 'standard',
  };
}

function message(answer: Answer, id: string, content: unknown[]): Record<string, unknown> {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: answer.model,
    content,
    stop_reason: answer.toolCalls.length > 0 ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: usage(answer),
  };
}

function frames(answer: Answer, ctx: RenderContext): Frame[] {
  const out: Frame[] = [];
  const emit = (event: string, data: Record<string, unknown>): void => {
    out.push({ event, data: { type: event, ...data } });
  };
  const start = message(answer, ctx.newId('msg_01'), []);
  emit('message_start', { message: { ...start, stop_reason: null, usage: { ...usage(answer), output_tokens: 1 } } });
  blocksOf(answer, ctx).forEach(({ block, deltas }, index) => {
    // a tool_use block starts with empty input and its JSON arrives as input_json_delta
    const opening = block.type === 'tool_use' ? { ...block, input: {} } : { ...block, text: '' };
    emit('content_block_start', { index, content_block: opening });
    if (index === 0) emit('ping', {});
    for (const delta of deltas) emit('content_block_delta', { index, delta });
    emit('content_block_stop', { index });
  });
  emit('message_delta', {
    delta: { stop_reason: start.stop_reason, stop_sequence: null },
    usage: { output_tokens: answer.outputTokens },
  });
  emit('message_stop', {});
  return out;
}

function json(answer: Answer, ctx: RenderContext): unknown {
  return message(
    answer,
    ctx.newId('msg_01'),
    blocksOf(answer, ctx).map(({ block }) => block),
  );
}

function errorBody(status: number, message: string): unknown {
  return {
    type: 'error',
    error: { type: ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message },
  };
}

/** The Anthropic Messages API. */
export const anthropicApi: ApiAdapter = {
  inspect,
  frames,
  json,
  errorBody,
  preamble: 1,
  eol: '\n',
  headers: (ctx) => ({ 'request-id': ctx.newId('req_01') }),
};
