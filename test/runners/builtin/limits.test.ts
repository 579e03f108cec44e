import { APICallError } from 'ai';
import { describe, expect, it } from 'vitest';
import { endpointFromEnv, isLoopbackEndpoint, validateEndpoint } from '../../../src/runners/builtin/model.js';
import { readProviderError, retryAfterSeconds } from '../../../src/runners/builtin/rate-limit.js';
import { Watchdog, type WatchdogTrip } from '../../../src/runners/builtin/watchdog.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');

describe('rate-limit reset from headers', () => {
  it.each([
    [{ 'retry-after': '17' }, 17],
    [{ 'Retry-After': '2.5' }, 2.5],
    [{ 'retry-after': 'Thu, 01 Jan 2026 00:01:00 GMT' }, 60],
    [{ 'retry-after-ms': '1500', 'retry-after': '9' }, 1.5],
    // to the millisecond, up: a resume is never early, and not a second late either (issue 15)
    [{ 'retry-after-ms': '1234.2' }, 1.235],
    [
      {
        'anthropic-ratelimit-requests-reset': '2026-01-01T00:00:30Z',
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-tokens-reset': '2026-01-01T00:05:00Z',
        'anthropic-ratelimit-tokens-remaining': '9000',
      },
      30,
    ],
    [{ 'anthropic-ratelimit-input-tokens-reset': '2026-01-01T00:00:45Z' }, 45],
    [
      {
        'x-ratelimit-reset-requests': '6m0s',
        'x-ratelimit-remaining-requests': '0',
        'x-ratelimit-reset-tokens': '20ms',
        'x-ratelimit-remaining-tokens': '10',
      },
      360,
    ],
    [{ 'x-ratelimit-reset-tokens': '1h2m3.5s' }, 3723.5],
    [{ 'x-ratelimit-reset': String(NOW / 1000 + 90) }, 90],
    [{ 'x-ratelimit-reset': '12' }, 12],
    [{}, null],
    [{ 'retry-after': 'soon' }, null],
  ])('%j → %s s', (headers, seconds) => {
    expect(retryAfterSeconds(headers as Record<string, string>, NOW)).toBe(seconds);
  });

  it('decides from the status code only: 429 and 529 are limits, a 500 saying "rate limit" is not', () => {
    const limited = new APICallError({
      message: 'slow down',
      url: 'http://x',
      requestBodyValues: {},
      statusCode: 429,
      responseHeaders: { 'retry-after': '5' },
    });
    expect(readProviderError(limited, NOW)).toMatchObject({ statusCode: 429, isRateLimited: true, retryAfterS: 5 });
    const overloaded = new APICallError({
      message: 'Overloaded',
      url: 'http://x',
      requestBodyValues: {},
      statusCode: 529,
    });
    expect(readProviderError(overloaded, NOW)).toMatchObject({ isRateLimited: true, retryAfterS: null });
    const wordy = new APICallError({
      message: 'rate limit exceeded, 429 too many requests',
      url: 'http://x',
      requestBodyValues: {},
      statusCode: 500,
    });
    expect(readProviderError(wordy, NOW)).toMatchObject({ statusCode: 500, isRateLimited: false, retryAfterS: null });
    expect(readProviderError(new Error('429 rate limit'), NOW)).toBeNull();
  });
});

describe('watchdog', () => {
  it('trips stalled after the idle time without progress, not while a tool runs', async () => {
    const trips: WatchdogTrip[] = [];
    const dog = new Watchdog({ idleMs: 150, onTrip: (t) => trips.push(t) });
    dog.start();
    dog.toolStarted();
    await new Promise((r) => setTimeout(r, 400));
    expect(trips).toEqual([]);
    dog.toolEnded('run_command', { command: 'sleep 1' }, false);
    await new Promise((r) => setTimeout(r, 400));
    expect(trips).toEqual([{ status: 'stalled', why: expect.stringContaining('no progress') }]);
    dog.stop();
  });

  it('progress keeps it quiet', async () => {
    const trips: WatchdogTrip[] = [];
    const dog = new Watchdog({ idleMs: 300, onTrip: (t) => trips.push(t) });
    dog.start();
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 60));
      dog.progress();
    }
    expect(trips).toEqual([]);
    dog.stop();
  });

  it('trips stuck on the third identical failing call (argument order ignored), not on different ones', () => {
    const trips: WatchdogTrip[] = [];
    const dog = new Watchdog({ idleMs: 60_000, onTrip: (t) => trips.push(t) });
    dog.recordCall('edit_file', { path: 'a', old_text: 'x' }, true);
    dog.recordCall('edit_file', { path: 'b', old_text: 'x' }, true);
    dog.recordCall('edit_file', { old_text: 'x', path: 'a' }, true);
    dog.recordCall('edit_file', { path: 'a', old_text: 'x' }, false); // it worked once: the count starts over
    dog.recordCall('edit_file', { path: 'a', old_text: 'x' }, true);
    dog.recordCall('edit_file', { path: 'a', old_text: 'x' }, true);
    expect(trips).toEqual([]);
    dog.recordCall('edit_file', { path: 'a', old_text: 'x' }, true);
    expect(trips).toEqual([
      { status: 'stuck', why: expect.stringContaining('the same failing call 3 times: edit_file') },
    ]);
  });
});

describe('model endpoint from env/config', () => {
  it('reads GAFFER_MODEL_* and picks the API', () => {
    expect(endpointFromEnv({})).toBeNull();
    expect(endpointFromEnv({ GAFFER_MODEL_URL: 'http://127.0.0.1:11434/v1/', GAFFER_MODEL: 'qwen3:8b' })).toEqual({
      ok: true,
      endpoint: { api: 'openai-compatible', url: 'http://127.0.0.1:11434/v1', key: null, model: 'qwen3:8b' },
    });
    expect(
      endpointFromEnv({
        GAFFER_MODEL_URL: 'https://api.anthropic.com/v1',
        GAFFER_MODEL: 'claude-sonnet-4-5',
        GAFFER_MODEL_KEY: 'k',
      }),
    ).toMatchObject({ ok: true, endpoint: { api: 'anthropic', key: 'k' } });
    expect(
      endpointFromEnv({ GAFFER_MODEL_URL: 'http://h/v1', GAFFER_MODEL: 'm', GAFFER_MODEL_API: 'anthropic' }),
    ).toMatchObject({ ok: true, endpoint: { api: 'anthropic' } });
  });

  it('names the bad value and how to fix it', () => {
    expect(endpointFromEnv({ GAFFER_MODEL_URL: 'http://h/v1' })).toMatchObject({
      ok: false,
      field: 'GAFFER_MODEL',
      message: expect.stringContaining('GAFFER_MODEL is missing'),
    });
    expect(
      endpointFromEnv({ GAFFER_MODEL_URL: 'http://h/v1', GAFFER_MODEL: 'm', GAFFER_MODEL_API: 'gemini' }),
    ).toMatchObject({ ok: false, field: 'GAFFER_MODEL_API', message: expect.stringContaining('got "gemini"') });
    expect(validateEndpoint({ url: 'ftp://x', model: 'm' })).toMatchObject({ ok: false, field: 'url' });
  });

  it('knows a loopback endpoint (billing free by default)', () => {
    expect(isLoopbackEndpoint({ api: 'openai-compatible', url: 'http://127.0.0.1:8080/v1', model: 'm' })).toBe(true);
    expect(isLoopbackEndpoint({ api: 'anthropic', url: 'https://api.anthropic.com/v1', model: 'm' })).toBe(false);
  });
});
