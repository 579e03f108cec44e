// OpenAI's error body, shared by Chat Completions and Responses.

const ERRORS: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
  500: { type: 'server_error', code: null },
  503: { type: 'server_error', code: null },
};

/** `{error: {message, type, param, code}}` as OpenAI sends it. */
export function openAiErrorBody(status: number, message: string): unknown {
  const known = ERRORS[status] ?? { type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
  return { error: { message, type: known.type, param: null, code: known.code } };
}
