/** Rate limits wait, never spill (spec 04): at most 5 requeues or 6 hours, then `rate_limited` for good. */
export const MAX_REQUEUES = 5;
export const MAX_RATE_LIMIT_WAIT_S = 6 * 3600;
export const BACKOFF_START_S = 60;
export const BACKOFF_MAX_S = 30 * 60;

/** How long to wait before requeue number `requeue` (0-based): the provider's reset time, else exponential backoff from 60 s, capped at 30 min. */
export function rateLimitDelayS(requeue: number, retryAfterS: number | null | undefined): number {
  if (typeof retryAfterS === 'number' && Number.isFinite(retryAfterS) && retryAfterS >= 0)
    return Math.min(retryAfterS, MAX_RATE_LIMIT_WAIT_S);
  return Math.min(BACKOFF_START_S * 2 ** requeue, BACKOFF_MAX_S);
}

/** Sleeps `ms`, or less when the signal aborts; true when it slept the whole time. */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
