import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModel } from 'ai';
import type { BuiltinEndpoint } from './model.js';

/** The AI SDK model for `modelId` on `endpoint` (the endpoint's default model is not used here). */
export function createLanguageModel(endpoint: BuiltinEndpoint, modelId: string): LanguageModel {
  if (endpoint.api === 'anthropic') {
    // the key is given explicitly (even empty) so the provider never reads ANTHROPIC_API_KEY itself
    return createAnthropic({ baseURL: endpoint.url, apiKey: endpoint.key ?? '' })(modelId);
  }
  return createOpenAICompatible({
    name: 'gaffer',
    baseURL: endpoint.url,
    ...(endpoint.key !== null && endpoint.key !== undefined ? { apiKey: endpoint.key } : {}),
    includeUsage: true,
  })(modelId);
}
