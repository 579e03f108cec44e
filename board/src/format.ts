/** Seconds as a person reads them: 42s, 3m 05s, 1h 02m. */
export function duration(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return '—';
  const t = Math.round(s);
  if (t < 60) return `${t}s`;
  if (t < 3600) return `${Math.floor(t / 60)}m ${String(t % 60).padStart(2, '0')}s`;
  return `${Math.floor(t / 3600)}h ${String(Math.floor((t % 3600) / 60)).padStart(2, '0')}m`;
}

/** Dollars, or "unknown" when the spend was not known (never a guessed 0). */
export function usd(v: number | null | undefined): string {
  if (v === null || v === undefined) return 'unknown';
  return v === 0 ? '$0' : v < 0.01 ? '<$0.01' : `$${v.toFixed(2)}`;
}

/** Epoch seconds or an ISO string as a local time. */
export function when(v: number | string | null | undefined): string {
  if (v === null || v === undefined) return '—';
  const d = typeof v === 'number' ? new Date(v * 1000) : new Date(v);
  return Number.isNaN(d.getTime()) ? String(v) : d.toLocaleString();
}
