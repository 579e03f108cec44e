// issue 15 "Spend is recorded honestly" (spec 07 "Budgets"): what one attempt cost, in the unit its
// billing pays in — dollars for `api`, requests and tokens for `subscription`, wall-seconds for
// `free`. What the runner did not report and gaffer cannot work out is null and says why: unknown
// is never 0, so an unknown cost and a free one never read the same.
import type { Billing } from './route.js';

/** Config `prices.<model>`: dollars per million tokens, for runners that report tokens but no cost. */
export interface Price {
  input_per_mtok: number;
  output_per_mtok: number;
}

/** One attempt's spend. Every amount is null when unknown; an attempt that never got a process spent 0. */
export interface Spend {
  billing: Billing;
  /** Dollars: `api` only (the runner's figure, else tokens × the configured price). */
  usd: number | null;
  /** Model requests (the runner's turns or rounds). */
  requests: number | null;
  /** Input plus output tokens. */
  tokens: number | null;
  /** Wall-clock seconds of the run. */
  seconds: number | null;
  /** Why the billing's own unit is unknown; null when it is known. */
  unknown: string | null;
}

/** What a runner's report tells about usage (runner-report.ts names). */
export interface UsageFacts {
  costUsd: number | null;
  inputTokens: number;
  outputTokens: number;
  rounds: number;
  durationMs: number;
}

/** The spend of one attempt from its runner's report, its route's billing and the configured price of its model. */
export function spendOf(
  r: UsageFacts,
  billing: Billing,
  opts: { started: boolean; model: string | null; price: Price | null },
): Spend {
  if (!opts.started)
    return { billing, usd: billing === 'api' ? 0 : null, requests: 0, tokens: 0, seconds: 0, unknown: null };
  const tokens = r.inputTokens + r.outputTokens > 0 ? r.inputTokens + r.outputTokens : null;
  const requests = r.rounds > 0 ? r.rounds : null;
  const seconds = Math.round(r.durationMs / 100) / 10;
  if (billing === 'free') return { billing, usd: null, requests, tokens, seconds, unknown: null };
  if (billing === 'subscription') {
    const unknown = requests === null && tokens === null ? 'the runner reported neither requests nor tokens' : null;
    return { billing, usd: null, requests, tokens, seconds, unknown };
  }
  if (r.costUsd !== null) return { billing, usd: r.costUsd, requests, tokens, seconds, unknown: null };
  if (opts.price !== null && tokens !== null) {
    const usd = (r.inputTokens * opts.price.input_per_mtok + r.outputTokens * opts.price.output_per_mtok) / 1e6;
    return { billing, usd: Math.round(usd * 1e6) / 1e6, requests, tokens, seconds, unknown: null };
  }
  const why =
    tokens === null
      ? 'the runner reported no cost and no tokens'
      : `the runner reported no cost and no price is configured for model ${opts.model === null ? '(its default)' : JSON.stringify(opts.model)} — set prices.<model> in the config`;
  return { billing, usd: null, requests, tokens, seconds, unknown: why };
}

/** One attempt's spend in words: `$0.0123 (api)`, `3 requests, 12,000 tokens (subscription)`, `12.1 s (free)`, `unknown (api): why`. */
export function spendText(s: Spend): string {
  if (s.unknown !== null) return `cost unknown (${s.billing}): ${s.unknown}`;
  if (s.billing === 'api') return `${usd(s.usd ?? 0)} (api)`;
  if (s.billing === 'subscription') return `${usage(s.requests, s.tokens)} (subscription)`;
  return `${s.seconds ?? 0} s (free)`;
}

/** A job's spend over its attempts: dollars (null as soon as one `api` attempt's is unknown) and the whole in words. */
export function totalSpend(rows: readonly { name: string; spend: Spend }[]): {
  cost_usd: number | null;
  spend: string;
} {
  const api = rows.filter((r) => r.spend.billing === 'api');
  const unknown = rows.filter((r) => r.spend.unknown !== null);
  const cost = api.some((r) => r.spend.usd === null)
    ? null
    : Math.round(api.reduce((sum, r) => sum + (r.spend.usd ?? 0), 0) * 1e6) / 1e6;
  const parts: string[] = [];
  if (unknown.length > 0)
    parts.push(
      `cost unknown for ${unknown.map((r) => `${r.name} (${r.spend.billing}: ${r.spend.unknown})`).join('; ')}`,
    );
  const knownApi = api.filter((r) => r.spend.usd !== null);
  if (knownApi.length > 0) parts.push(`${usd(knownApi.reduce((sum, r) => sum + (r.spend.usd ?? 0), 0))} api`);
  const sub = rows.filter((r) => r.spend.billing === 'subscription' && r.spend.unknown === null);
  if (sub.length > 0) parts.push(`${usage(sumOf(sub, 'requests'), sumOf(sub, 'tokens'))} on subscription`);
  const free = rows.filter((r) => r.spend.billing === 'free');
  if (free.length > 0)
    parts.push(`${Math.round(free.reduce((sum, r) => sum + (r.spend.seconds ?? 0), 0) * 10) / 10} s free`);
  return { cost_usd: cost, spend: parts.length > 0 ? parts.join('; ') : 'nothing ran' };
}

function sumOf(rows: readonly { spend: Spend }[], key: 'requests' | 'tokens'): number | null {
  const known = rows.map((r) => r.spend[key]).filter((n): n is number => n !== null);
  return known.length === 0 ? null : known.reduce((a, b) => a + b, 0);
}

function usage(requests: number | null, tokens: number | null): string {
  const parts = [
    requests !== null ? `${requests} request${requests === 1 ? '' : 's'}` : null,
    tokens !== null ? `${tokens.toLocaleString('en-US')} tokens` : null,
  ].filter((p) => p !== null);
  return parts.length > 0 ? parts.join(', ') : 'no usage reported';
}

function usd(n: number): string {
  return `$${n < 0.01 && n > 0 ? n.toFixed(6).replace(/0+$/, '').replace(/\.$/, '.0') : n.toFixed(2)}`;
}
