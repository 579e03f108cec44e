import { describe, expect, it } from 'vitest';
import { epochS } from '../../src/engine/clock.js';
import { makeWorkspace } from '../helpers/temp.js';
import { inProcess, openEngine } from './helpers.js';

// spec 02 on the HTTP door: `budget_paused` and `breaker_open` are 429 with the reason, the
// seconds to wait and a Retry-After header; `GET /api/stats` shows each provider and the breaker.

describe('budgets and the breaker over HTTP (issue 15)', () => {
  it('a spent budget is 429 budget_paused with reason, pause_until, retry_after_s and Retry-After; stats show the provider', async () => {
    const engine = await openEngine({
      operations: {
        budgets: [{ provider: 'shell', entry: null, window: 'week', unit: 'seconds', limit: 0.1, pace_margin: 0.2 }],
      },
    });
    const { call } = inProcess(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const body = {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'w', runner: 'shell', instruction: 'sleep 0.3; echo w > w.txt' }],
    };
    const first = await call('POST', '/api/jobs', body);
    expect(first.status).toBe(202);
    await engine.settled(first.json.id);
    const refused = await call('POST', '/api/jobs', body);
    expect(refused.status).toBe(429);
    expect(refused.json.error).toMatchObject({ code: 'budget_paused', field: 'tasks[0]' });
    expect(refused.json.error.reason).toMatch(/shell week budget \(0\.1 seconds\) is spent/);
    expect(refused.json.error.pause_until).toBeGreaterThan(epochS());
    expect(Number(refused.headers.get('retry-after'))).toBe(Math.ceil(refused.json.error.retry_after_s));
    const stats = await call('GET', '/api/stats');
    expect(stats.json.providers).toEqual([
      expect.objectContaining({
        provider: 'shell',
        suspended_until: null,
        budgets: [expect.objectContaining({ window: 'week', state: 'spent' })],
      }),
    ]);
    expect(stats.json.breaker.open).toBe(false);
  });

  it('an open breaker is 429 breaker_open with retry_after_s and Retry-After', async () => {
    const engine = await openEngine({ operations: { breaker: { trip_after: 1, cooldown_s: 300 } } });
    const { call } = inProcess(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const body = {
      workspace: ws,
      verify: 'none',
      unattended: true,
      tasks: [{ name: 'f', runner: 'shell', instruction: 'exit 3' }],
    };
    const first = await call('POST', '/api/jobs', body);
    await engine.settled(first.json.id);
    const refused = await call('POST', '/api/jobs', body);
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('breaker_open');
    expect(refused.json.error.retry_after_s).toBeGreaterThan(290);
    expect(refused.headers.get('retry-after')).toBe(String(refused.json.error.retry_after_s));
  });
});
