import { APICallError, RetryError } from 'ai';

/** What a provider's HTTP error says, read from its status and headers only (spec 04). */
export interface ProviderHttpError {
  statusCode: number;
  /** 429, or Anthropic's 529 (overloaded). */
  isRateLimited: boolean;
  /** Seconds until the limit resets, when the provider names it; null otherwise. */
  retryAfterS: number | null;
  /** The provider's message, short. */
  message: string;
}

const MAX_MESSAGE_CHARS = 300;

/** Finds the provider's APICallError in what the SDK threw (possibly wrapped in a RetryError). */
function findApiCallError(error: unknown, depth = 0): APICallError | null {
  if (depth > 4 || error === null || typeof error !== 'object') return null;
  if (APICallError.isInstance(error)) return error;
  if (RetryError.isInstance(error)) return findApiCallError(error.lastError, depth + 1);
  return findApiCallError((error as { cause?: unknown }).cause, depth + 1);
}

/**
 * The HTTP error behind an SDK error, when there is one. The rate-limit decision comes from the
 * status code alone — never from the message text.
 */
export function readProviderError(error: unknown, now = Date.now()): ProviderHttpError | null {
  const apiError = findApiCallError(error);
  if (apiError?.statusCode === undefined) return null;
  const statusCode = apiError.statusCode;
  const isRateLimited = statusCode === 429 || statusCode === 529;
  const message =
    apiError.message.length > MAX_MESSAGE_CHARS ? `${apiError.message.slice(0, MAX_MESSAGE_CHARS)}…` : apiError.message;
  return {
    statusCode,
    isRateLimited,
    retryAfterS: isRateLimited ? retryAfterSeconds(apiError.responseHeaders ?? {}, now) : null,
    message,
  };
}

/** `1s`, `6m0s`, `20ms`, `1h2m3.5s` (OpenAI's x-ratelimit-reset-*) → seconds. */
function parseDuration(text: string): number | null {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(trimmed); m !== null; m = re.exec(trimmed)) {
    const n = Number(m[1]);
    total += m[2] === 'h' ? n * 3600 : m[2] === 'm' ? n * 60 : m[2] === 's' ? n : n / 1000;
    consumed += m[0].length;
  }
  return consumed === trimmed.length && consumed > 0 ? total : null;
}

/** An RFC 3339 / HTTP date → seconds from `now`. */
function untilDate(text: string, now: number): number | null {
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, (at - now) / 1000);
}

/** The reset of the exhausted limits (`remaining` 0) when any say so, else the latest reset. */
function pickResets(resets: { seconds: number; remaining: string | undefined }[]): number | null {
  if (resets.length === 0) return null;
  const exhausted = resets.filter((r) => r.remaining !== undefined && Number(r.remaining) === 0);
  return Math.max(...(exhausted.length > 0 ? exhausted : resets).map((r) => r.seconds));
}

/**
 * Seconds to wait from a rate-limit answer's headers: `retry-after-ms`, `retry-after` (seconds or
 * an HTTP date), Anthropic's `anthropic-ratelimit-*-reset` (RFC 3339), OpenAI's
 * `x-ratelimit-reset-*` (durations) or `x-ratelimit-reset` (epoch seconds or seconds). Null when
 * none names a time. Seconds, rounded up to the millisecond.
 */
export function retryAfterSeconds(headers: Record<string, string>, now = Date.now()): number | null {
  const h: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) h[name.toLowerCase()] = value;
  // to the millisecond, up: a resume rounded to whole seconds would come up to a second late (issue 15)
  const up = (s: number | null): number | null =>
    s === null || !Number.isFinite(s) ? null : Math.max(0, Math.ceil(s * 1000) / 1000);

  if (h['retry-after-ms'] !== undefined && /^\d+(\.\d+)?$/.test(h['retry-after-ms'].trim()))
    return up(Number(h['retry-after-ms']) / 1000);
  const retryAfter = h['retry-after']?.trim();
  if (retryAfter !== undefined && retryAfter !== '') {
    const seconds = /^\d+(\.\d+)?$/.test(retryAfter) ? Number(retryAfter) : untilDate(retryAfter, now);
    if (seconds !== null) return up(seconds);
  }

  const anthropic: { seconds: number; remaining: string | undefined }[] = [];
  const openai: { seconds: number; remaining: string | undefined }[] = [];
  for (const [name, value] of Object.entries(h)) {
    const a = /^anthropic-ratelimit-(.+)-reset$/.exec(name);
    if (a !== null) {
      const seconds = untilDate(value, now);
      if (seconds !== null) anthropic.push({ seconds, remaining: h[`anthropic-ratelimit-${a[1] ?? ''}-remaining`] });
    }
    const o = /^x-ratelimit-reset-(.+)$/.exec(name);
    if (o !== null) {
      const seconds = parseDuration(value);
      if (seconds !== null) openai.push({ seconds, remaining: h[`x-ratelimit-remaining-${o[1] ?? ''}`] });
    }
  }
  const fromHeaders = pickResets(anthropic) ?? pickResets(openai);
  if (fromHeaders !== null) return up(fromHeaders);

  const reset = h['x-ratelimit-reset']?.trim();
  if (reset !== undefined && /^\d+(\.\d+)?$/.test(reset)) {
    const n = Number(reset);
    // epoch seconds (or ms) when it is a date, else seconds to wait
    return up(n > 1e12 ? (n - now) / 1000 : n > 1e9 ? n - now / 1000 : n);
  }
  return null;
}
