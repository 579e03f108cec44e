// OpenAI Responses API: POST /v1/responses, streamed as response.created … response.completed (codex speaks this).
import type { Answer, ApiAdapter, RenderContext, RequestView, ResolvedCall } from '../adapter.js';
import type { Frame } from '../sse.js';
import { isRecord, splitChunks, textOf } from '../text.js';
import type { ToolResult } from '../types.js';
import { openAiErrorBody } from './openai-error.js';

const OUTPUT_ITEMS = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output']);

function inspect(body: Record<string, any>): RequestView {
  const system: string[] = [textOf(body.instructions)];
  const conversation: Record<string, any>[] = [];
  const input: unknown[] =
    typeof body.input === 'string'
      ? [{ type: 'message', role: 'user', content: body.input }]
      : Array.isArray(body.input)
        ? body.input
        : [];
  for (const item of input) {
    if (!isRecord(item)) continue;
    if (item.role === 'system' || item.role === 'developer') system.push(textOf(item.content));
    else conversation.push(item);
  }
  const toolResults: ToolResult[] = [];
  for (let i = conversation.length - 1; i >= 0 && OUTPUT_ITEMS.has(String(conversation[i]?.type)); i -= 1) {
    const item = conversation[i] ?? {};
    toolResults.unshift({
      callId: typeof item.call_id === 'string' ? item.call_id : undefined,
      output: textOf(item.output),
    });
  }
  const last = conversation.at(-1);
  const format = isRecord(body.text?.format) ? body.text.format : undefined;
  return {
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    system: system.filter(Boolean).join('\n'),
    toolNames: Array.isArray(body.tools)
      ? body.tools
          .filter(isRecord)
          .map((t) => t.name)
          .filter((n): n is string => typeof n === 'string')
      : [],
    messageCount: conversation.length,
    lastRole:
      toolResults.length > 0 ? 'tool' : last === undefined ? undefined : last.role === 'user' ? 'user' : 'assistant',
    lastText: textOf(last?.content),
    toolResults,
    wantsJson: format?.type === 'json_schema' || format?.type === 'json_object',
    jsonSchema: format?.schema,
  };
}

/** A call to a `custom` (free-form) tool — codex's apply_patch for its own model slugs — is a custom_tool_call with raw `input`. */
function isCustomTool(name: string, ctx: RenderContext): boolean {
  const tools: unknown[] = Array.isArray(ctx.request.body.tools) ? ctx.request.body.tools : [];
  return tools.some((tool) => isRecord(tool) && tool.name === name && tool.type === 'custom');
}

function customInput(call: ResolvedCall): string {
  return typeof call.args.input === 'string' ? call.args.input : call.arguments;
}

interface Item {
  item: Record<string, unknown>;
  frames: (seq: SeqEmit, outputIndex: number) => void;
}

type SeqEmit = (type: string, data: Record<string, unknown>) => void;

function itemsOf(answer: Answer, ctx: RenderContext): Item[] {
  const items: Item[] = [];
  if (answer.text !== '' || answer.toolCalls.length === 0) {
    const id = ctx.newId('msg_');
    const part = { type: 'output_text', text: answer.text, annotations: [], logprobs: [] };
    const item = { id, type: 'message', status: 'completed', role: 'assistant', content: [part] };
    items.push({
      item,
      frames: (emit, output_index) => {
        emit('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
        const at = { item_id: id, output_index, content_index: 0 };
        emit('response.content_part.added', { ...at, part: { ...part, text: '' } });
        for (const delta of splitChunks(answer.text))
          emit('response.output_text.delta', { ...at, delta, logprobs: [] });
        emit('response.output_text.done', { ...at, text: answer.text, logprobs: [] });
        emit('response.content_part.done', { ...at, part });
        emit('response.output_item.done', { output_index, item });
      },
    });
  }
  for (const call of answer.toolCalls) {
    const call_id = call.id ?? ctx.newId('call_');
    if (isCustomTool(call.name, ctx)) {
      const id = ctx.newId('ctc_');
      const input = customInput(call);
      const item = { id, type: 'custom_tool_call', status: 'completed', call_id, name: call.name, input };
      items.push({
        item,
        frames: (emit, output_index) => {
          emit('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', input: '' } });
          for (const delta of splitChunks(input))
            emit('response.custom_tool_call_input.delta', { item_id: id, output_index, delta });
          emit('response.custom_tool_call_input.done', { item_id: id, output_index, input });
          emit('response.output_item.done', { output_index, item });
        },
      });
      continue;
    }
    const id = ctx.newId('fc_');
    const item = {
      id,
      type: 'function_call',
      status: 'completed',
      arguments: call.arguments,
      call_id,
      name: call.name,
    };
    items.push({
      item,
      frames: (emit, output_index) => {
        emit('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } });
        for (const delta of splitChunks(call.arguments))
          emit('response.function_call_arguments.delta', { item_id: id, output_index, delta });
        emit('response.function_call_arguments.done', {
          item_id: id,
          output_index,
          name: call.name,
          arguments: call.arguments,
        });
        emit('response.output_item.done', { output_index, item });
      },
    });
  }
  return items;
}

function responseObject(
  answer: Answer,
  ctx: RenderContext,
  id: string,
  status: string,
  output: unknown[],
): Record<string, unknown> {
  const body = ctx.request.body;
  const done = status === 'completed';
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: answer.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: null },
    store: body.store ?? true,
    temperature: 1,
    text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: 1,
    truncation: 'disabled',
    usage: done
      ? {
          input_tokens: answer.inputTokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: answer.outputTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: answer.inputTokens + answer.outputTokens,
        }
      : null,
    user: null,
    metadata: {},
  };
}

function frames(answer: Answer, ctx: RenderContext): Frame[] {
  const out: Frame[] = [];
  let sequence_number = 0;
  const emit: SeqEmit = (type, data) => {
    out.push({ event: type, data: { type, sequence_number, ...data } });
    sequence_number += 1;
  };
  const id = ctx.newId('resp_');
  const items = itemsOf(answer, ctx);
  emit('response.created', { response: responseObject(answer, ctx, id, 'in_progress', []) });
  emit('response.in_progress', { response: responseObject(answer, ctx, id, 'in_progress', []) });
  items.forEach((item, index) => item.frames(emit, index));
  emit('response.completed', {
    response: responseObject(
      answer,
      ctx,
      id,
      'completed',
      items.map((i) => i.item),
    ),
  });
  return out;
}

function json(answer: Answer, ctx: RenderContext): unknown {
  return responseObject(
    answer,
    ctx,
    ctx.newId('resp_'),
    'completed',
    itemsOf(answer, ctx).map((i) => i.item),
  );
}

/** The OpenAI Responses API. */
export const responsesApi: ApiAdapter = {
  inspect,
  frames,
  json,
  errorBody: openAiErrorBody,
  preamble: 2,
  eol: '\n',
  headers: (ctx) => ({ 'x-request-id': ctx.newId('req_') }),
};
