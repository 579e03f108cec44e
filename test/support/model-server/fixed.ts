// Endpoints answered without the script: the HEAD / warm-up, token counts, model lists.
import type { ServerResponse } from 'node:http';
import { DEFAULT_MODEL } from './answer.js';
import { sendJson } from './http.js';
import type { FixedRoute } from './routes.js';
import { estimateTokens } from './text.js';

/** Answers an endpoint that needs no script: health, token counts, model lists. */
export function answerFixed(
  route: FixedRoute,
  { raw, method, models }: { raw: string; method: string; models: string[] },
  res: ServerResponse,
): void {
  switch (route.kind) {
    case 'health':
      res.writeHead(200, { 'content-type': 'text/plain' }).end(method === 'HEAD' ? undefined : 'model-server ok\n');
      return;
    case 'anthropic-count':
      sendJson(res, 200, { input_tokens: estimateTokens(raw.length) });
      return;
    case 'gemini-count':
      sendJson(res, 200, { totalTokens: estimateTokens(raw.length) });
      return;
    case 'openai-models':
      sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({
          id,
          object: 'model',
          type: 'model',
          display_name: id,
          created: 0,
          created_at: '2025-01-01T00:00:00Z',
          owned_by: 'model-server',
        })),
        has_more: false,
        first_id: models[0] ?? null,
        last_id: models.at(-1) ?? null,
      });
      return;
    case 'gemini-models':
      sendJson(res, 200, { models: models.map(geminiModel) });
      return;
    case 'gemini-model':
      sendJson(res, 200, geminiModel(route.pathModel ?? DEFAULT_MODEL));
      return;
  }
}

function geminiModel(id: string): Record<string, unknown> {
  return {
    name: `models/${id}`,
    version: '001',
    displayName: id,
    inputTokenLimit: 1_048_576,
    outputTokenLimit: 65_536,
    supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
  };
}
