/** The wire protocols the builtin agent speaks (spec 04 `builtin`). */
export const MODEL_APIS = ['openai-compatible', 'anthropic'] as const;
export type ModelApi = (typeof MODEL_APIS)[number];

/**
 * Where the builtin agent's model lives. From config or env only — never from a request (a
 * request may pick a model on this endpoint, never a URL). The config's `models.default`
 * (src/config `ModelEndpoint`) has this shape and can be passed as it is.
 */
export interface BuiltinEndpoint {
  /** `openai-compatible` (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, OpenAI) or `anthropic`. */
  api: ModelApi;
  /** Base URL including the version path: `http://127.0.0.1:11434/v1`, `https://api.anthropic.com/v1`. */
  url: string;
  /** API key, when the endpoint wants one. Never passed to the worker's commands. */
  key?: string | null;
  /** The model used when a task names none; null = every task must name one. */
  model: string | null;
}

/** A validation answer (STYLE: expected failures are values). */
export type EndpointResult =
  { ok: true; endpoint: BuiltinEndpoint } | { ok: false; code: 'invalid_config'; message: string; field: string };

function invalid(field: string, message: string): EndpointResult {
  return { ok: false, code: 'invalid_config', message, field };
}

/** Checks an endpoint object (from config); names the bad value and how to fix it. */
export function validateEndpoint(
  raw: {
    api?: string | undefined;
    url?: string | undefined;
    key?: string | null | undefined;
    model?: string | undefined;
  },
  fieldPrefix = '',
): EndpointResult {
  const url = raw.url?.trim() ?? '';
  if (url === '')
    return invalid(
      `${fieldPrefix}url`,
      `${fieldPrefix}url is missing: set the model endpoint's base URL, e.g. http://127.0.0.1:11434/v1`,
    );
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return invalid(`${fieldPrefix}url`, `${fieldPrefix}url must be an http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return invalid(`${fieldPrefix}url`, `${fieldPrefix}url must be http or https, got ${parsed.protocol}`);
  const apiWord = raw.api?.trim().toLowerCase();
  const api: ModelApi | null =
    apiWord === undefined || apiWord === ''
      ? parsed.hostname === 'api.anthropic.com'
        ? 'anthropic'
        : 'openai-compatible'
      : apiWord === 'anthropic'
        ? 'anthropic'
        : apiWord === 'openai' || apiWord === 'openai-compatible'
          ? 'openai-compatible'
          : null;
  if (api === null)
    return invalid(
      `${fieldPrefix}api`,
      `${fieldPrefix}api must be anthropic or openai, got ${JSON.stringify(raw.api)}`,
    );
  const model = raw.model?.trim() ?? '';
  if (model === '')
    return invalid(
      `${fieldPrefix}model`,
      `${fieldPrefix}model is missing: name the model to use, e.g. qwen3:8b or claude-sonnet-4-5`,
    );
  const key = raw.key === undefined || raw.key === null || raw.key === '' ? null : raw.key;
  return { ok: true, endpoint: { api, url: url.replace(/\/+$/, ''), key, model } };
}

/**
 * The endpoint from `GAFFER_MODEL_URL`, `GAFFER_MODEL_KEY`, `GAFFER_MODEL` and `GAFFER_MODEL_API`
 * (`anthropic` | `openai`; default: anthropic for api.anthropic.com, else openai-compatible).
 * Null when `GAFFER_MODEL_URL` is not set (no builtin endpoint configured).
 */
export function endpointFromEnv(env: NodeJS.ProcessEnv): EndpointResult | null {
  if (env.GAFFER_MODEL_URL === undefined || env.GAFFER_MODEL_URL === '') return null;
  const result = validateEndpoint({
    api: env.GAFFER_MODEL_API,
    url: env.GAFFER_MODEL_URL,
    key: env.GAFFER_MODEL_KEY,
    model: env.GAFFER_MODEL,
  });
  if (result.ok) return result;
  const envName =
    { url: 'GAFFER_MODEL_URL', api: 'GAFFER_MODEL_API', model: 'GAFFER_MODEL' }[result.field] ?? result.field;
  return { ...result, field: envName, message: result.message.replace(/^(url|api|model)\b/, envName) };
}

/** True when the endpoint is on this machine (billing `free` by default, spec 04). */
export function isLoopbackEndpoint(endpoint: BuiltinEndpoint): boolean {
  const host = new URL(endpoint.url).hostname;
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}
