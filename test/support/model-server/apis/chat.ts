// OpenAI Chat Completions: POST /v1/chat/completions, streamed as chat.completion.chunk objects ending in [DONE].
import type { Answer, ApiAdapter, RenderContext, RequestView } from '../adapter.js';
import type { Frame } from '../sse.js';
import { isRecord, splitChunks, textOf } from '../text.js';
import type { ToolResult } from '../types.js';
import { openAiErrorBody } from './openai-error.js';

function inspect(body: Record<string, any>): RequestView {
  const system: string[] = [];
  const conversation: Record<string, any>[] = [];
  for (const message of Array.isArray(body.messages) ? body.messages : []) {
    if (!isRecord(message)) continue;
    if (message.role === 'system' || message.role === 'developer') system.push(textOf(message.content));
    else conversation.push(message);
  }
  const toolResults: ToolResult[] = [];
  for (let i = conversation.length - 1; i >= 0 && conversation[i]?.role === 'tool'; i -= 1) {
    const message = conversation[i] ?? {};
    toolResults.unshift({
      callId: typeof message.tool_call_id === 'string' ? message.tool_call_id : undefined,
      output: textOf(message.content),
    });
  }
  const last = conversation.at(-1);
  const format = isRecord(body.response_format) ? body.response_format : undefined;
  return {
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    system: system.filter(Boolean).join('\n'),
    toolNames: Array.isArray(body.tools)
      ? body.tools
          .filter(isRecord)
          .map((t) => t.function?.name ?? t.name)
          .filter((n): n is string => typeof n === 'string')
      : [],
    messageCount: conversation.length,
    lastRole: toolResults.length > 0 ? 'tool' : last?.role === 'assistant' ? 'assistant' : last ? 'user' : undefined,
    lastText: textOf(last?.content),
    toolResults,
    wantsJson: format?.type === 'json_schema' || format?.type === 'json_object',
    jsonSchema: format?.json_schema?.schema,
  };
}

function usage(answer: Answer): Record<string, unknown> {
  return {
    prompt_tokens: answer.inputTokens,
    completion_tokens: answer.outputTokens,
    total_tokens: answer.inputTokens + answer.outputTokens,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

function finishReason(answer: Answer): string {
  return answer.toolCalls.length > 0 ? 'tool_calls' : 'stop';
}

function callIds(answer: Answer, ctx: RenderContext): string[] {
  return answer.toolCalls.map((call) => call.id ?? ctx.newId('call_'));
}

function frames(answer: Answer, ctx: RenderContext): Frame[] {
  const id = ctx.newId('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const wantsUsage = ctx.request.body.stream_options?.include_usage === true;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): Frame => ({
    data: {
      id,
      object: 'chat.completion.chunk',
      created,
      model: answer.model,
      system_fingerprint: 'fp_scripted',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(wantsUsage ? { usage: null } : {}),
    },
  });
  const out: Frame[] = [chunk({ role: 'assistant', content: '', refusal: null })];
  if (answer.text !== '') for (const content of splitChunks(answer.text)) out.push(chunk({ content }));
  const ids = callIds(answer, ctx);
  answer.toolCalls.forEach((call, index) => {
    out.push(
      chunk({
        tool_calls: [{ index, id: ids[index], type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    );
    for (const piece of splitChunks(call.arguments))
      out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  out.push(chunk({}, finishReason(answer)));
  if (wantsUsage) {
    out.push({
      data: {
        id,
        object: 'chat.completion.chunk',
        created,
        model: answer.model,
        system_fingerprint: 'fp_scripted',
        choices: [],
        usage: usage(answer),
      },
    });
  }
  out.push({ data: '[DONE]' });
  return out;
}

function json(answer: Answer, ctx: RenderContext): unknown {
  const ids = callIds(answer, ctx);
  const toolCalls = answer.toolCalls.map((call, index) => ({
    id: ids[index],
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
  return {
    id: ctx.newId('chatcmpl-'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: answer.model,
    system_fingerprint: 'fp_scripted',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: answer.text === '' && toolCalls.length > 0 ? null : answer.text,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason(answer),
      },
    ],
    usage: usage(answer),
  };
}

/** The OpenAI Chat Completions API. */
export const chatApi: ApiAdapter = {
  inspect,
  frames,
  json,
  errorBody: openAiErrorBody,
  preamble: 1,
  eol: '\n',
  headers: (ctx) => ({ 'x-request-id': ctx.newId('req_') }),
};
