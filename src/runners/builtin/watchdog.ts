import { performance } from 'node:perf_hooks';
import { formatSeconds } from '../states.js';

/** Why the watchdog stopped a worker (spec 04 "Watchdog"). */
export interface WatchdogTrip {
  status: 'stalled' | 'stuck';
  why: string;
}

/** Watchdog settings. */
export interface WatchdogOptions {
  /** No token and no tool call for this long (while no tool runs) = stalled, ms. */
  idleMs: number;
  /** The same failing call this many times = stuck (default 3). */
  stuckRepeats?: number;
  /** Called once, on the first trip. */
  onTrip: (trip: WatchdogTrip) => void;
}

/** JSON with sorted keys, so `{a, b}` and `{b, a}` are the same call. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Watches a builtin agent's loop: no progress (no token, no tool call) for `idleMs` while no
 * tool is running trips `stalled`; the same failing call (same tool, same arguments) repeated
 * `stuckRepeats` times trips `stuck`. A trip is reported once; the runner stops the loop.
 */
export class Watchdog {
  readonly #idleMs: number;
  readonly #stuckRepeats: number;
  readonly #onTrip: (trip: WatchdogTrip) => void;
  #lastProgress = performance.now();
  #running = 0;
  #timer: NodeJS.Timeout | null = null;
  #failures = new Map<string, number>();
  #trip: WatchdogTrip | null = null;

  constructor(opts: WatchdogOptions) {
    this.#idleMs = opts.idleMs;
    this.#stuckRepeats = opts.stuckRepeats ?? 3;
    this.#onTrip = opts.onTrip;
  }

  /** The trip, once there is one. */
  get trip(): WatchdogTrip | null {
    return this.#trip;
  }

  /** Starts the idle clock. */
  start(): void {
    this.#lastProgress = performance.now();
    this.#arm(this.#idleMs);
  }

  /** Something happened: a token, a tool call. */
  progress(): void {
    this.#lastProgress = performance.now();
  }

  /** A tool starts running (the clock does not run against a long command). */
  toolStarted(): void {
    this.#running++;
    this.progress();
  }

  /** A tool ended; `failed` when it failed or was refused. Trips `stuck` on the Nth same failure. */
  toolEnded(tool: string, args: unknown, failed: boolean): void {
    this.#running = Math.max(0, this.#running - 1);
    this.recordCall(tool, args, failed);
  }

  /** A call that never ran a tool (bad arguments, unknown tool) or one that did: counts toward `stuck`. */
  recordCall(tool: string, args: unknown, failed: boolean): void {
    this.progress();
    const key = `${tool} ${stableJson(args)}`;
    if (!failed) {
      this.#failures.delete(key);
      return;
    }
    const count = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, count);
    if (count >= this.#stuckRepeats) {
      const shown = key.length > 200 ? `${key.slice(0, 200)}…` : key;
      this.#fire({ status: 'stuck', why: `the same failing call ${count} times: ${shown}` });
    }
  }

  /** Stops the clock. */
  stop(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#check(), Math.max(1, ms));
    this.#timer.unref();
  }

  #check(): void {
    this.#timer = null;
    if (this.#trip !== null) return;
    const idle = performance.now() - this.#lastProgress;
    if (this.#running === 0 && idle >= this.#idleMs) {
      this.#fire({ status: 'stalled', why: `no progress (no tokens, no tool calls) for ${formatSeconds(idle)}` });
      return;
    }
    this.#arm(this.#running > 0 ? this.#idleMs : this.#idleMs - idle);
  }

  #fire(trip: WatchdogTrip): void {
    if (this.#trip !== null) return;
    this.#trip = trip;
    this.stop();
    this.#onTrip(trip);
  }
}
