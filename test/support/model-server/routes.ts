// Which endpoint a request is for. Paths match by suffix, so a base URL with any prefix (`/v1`, `/api/openai/v1`) works.
import type { ApiAdapter } from './adapter.js';
import { anthropicApi } from './apis/anthropic.js';
import { chatApi } from './apis/chat.js';
import { geminiApi } from './apis/gemini.js';
import { responsesApi } from './apis/responses.js';
import type { ApiKind } from './types.js';

/** A model call: one turn of the script answers it. */
export interface ModelRoute {
  kind: 'model';
  api: ApiKind;
  adapter: ApiAdapter;
  /** gemini's model, from the URL. */
  pathModel?: string;
  /** gemini streams by method name, not by a body field. */
  stream?: boolean;
}

/** Endpoints answered without the script. */
export interface FixedRoute {
  kind: 'health' | 'anthropic-count' | 'gemini-count' | 'openai-models' | 'gemini-models' | 'gemini-model';
  pathModel?: string;
}

const ADAPTERS: Record<ApiKind, ApiAdapter> = {
  anthropic: anthropicApi,
  chat: chatApi,
  responses: responsesApi,
  gemini: geminiApi,
};

/** The route for a method and path (no query), or undefined for a 404. */
export function routeOf(method: string, path: string): ModelRoute | FixedRoute | undefined {
  if ((method === 'GET' || method === 'HEAD') && path === '/') return { kind: 'health' };
  const gemini = /\/models\/([^/:]+):([A-Za-z]+)$/.exec(path);
  if (method === 'POST' && gemini) {
    const [, model, verb] = gemini;
    if (verb === 'streamGenerateContent' || verb === 'generateContent') {
      return {
        kind: 'model',
        api: 'gemini',
        adapter: ADAPTERS.gemini,
        pathModel: decodeURIComponent(model ?? ''),
        stream: verb === 'streamGenerateContent',
      };
    }
    if (verb === 'countTokens') return { kind: 'gemini-count', pathModel: model };
    return undefined;
  }
  if (method === 'POST') {
    if (path.endsWith('/messages/count_tokens')) return { kind: 'anthropic-count' };
    if (path.endsWith('/messages')) return { kind: 'model', api: 'anthropic', adapter: ADAPTERS.anthropic };
    if (path.endsWith('/chat/completions')) return { kind: 'model', api: 'chat', adapter: ADAPTERS.chat };
    if (path.endsWith('/responses')) return { kind: 'model', api: 'responses', adapter: ADAPTERS.responses };
    return undefined;
  }
  if (method === 'GET') {
    if (/\/v1beta\/models$/.test(path)) return { kind: 'gemini-models' };
    const one = /\/v1beta\/models\/([^/:]+)$/.exec(path);
    if (one) return { kind: 'gemini-model', pathModel: decodeURIComponent(one[1] ?? '') };
    if (path.endsWith('/models')) return { kind: 'openai-models' };
  }
  return undefined;
}
