import type * as Ai from 'ai';
import type * as LanguageModel from './language-model.js';
import type * as RateLimit from './rate-limit.js';
import type * as Tools from './tools.js';

/**
 * The AI SDK and what is built on it (its providers, the tools, the provider-error reader), loaded
 * on the first builtin run: a process that runs no builtin worker (a CLI command, a server of
 * shell and agent-CLI jobs) never pays their ~25 MB of memory and their load time.
 */
export interface Sdk {
  streamText: typeof Ai.streamText;
  generateText: typeof Ai.generateText;
  stepCountIs: typeof Ai.stepCountIs;
  createLanguageModel: typeof LanguageModel.createLanguageModel;
  buildTools: typeof Tools.buildTools;
  readProviderError: typeof RateLimit.readProviderError;
}

let loading: Promise<Sdk> | null = null;

export function loadSdk(): Promise<Sdk> {
  loading ??= Promise.all([
    import('ai'),
    import('./language-model.js'),
    import('./tools.js'),
    import('./rate-limit.js'),
  ]).then(([ai, model, tools, rateLimit]) => ({
    streamText: ai.streamText,
    generateText: ai.generateText,
    stepCountIs: ai.stepCountIs,
    createLanguageModel: model.createLanguageModel,
    buildTools: tools.buildTools,
    readProviderError: rateLimit.readProviderError,
  }));
  return loading;
}
