import os from 'node:os';
import type { Redis } from 'ioredis';
import { advertisedKey, HELLO_ROUTE, safeJson } from './wire.js';

/** Where a coordinator told its nodes it listens (`<prefix>:advertised`), and on which host it runs. */
export interface Advertised {
  url: string;
  host: string;
}

/** How long the check's request may take, ms. */
const HELLO_TIMEOUT_MS = 5_000;

/** What the coordinator of a namespace last advertised; null when none did (or Redis does not answer). */
export async function readAdvertised(redis: Redis, prefix: string): Promise<Advertised | null> {
  const text = await redis.get(advertisedKey(prefix)).catch(() => null);
  const value = text === null ? null : (safeJson(text) as Partial<Advertised> | null);
  if (value === null || typeof value !== 'object' || typeof value.url !== 'string' || typeof value.host !== 'string')
    return null;
  return { url: value.url, host: value.host };
}

/** True for a URL whose host is this machine's loopback (`127.x`, `localhost`, `::1`). */
export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || /^127\./.test(host);
  } catch {
    return false;
  }
}

/**
 * Whether a node can serve its coordinator now: the URL it tried, and why not with what to fix
 * (null when it can; the token is never in it). The address is the node's `--coordinator` when given, else the
 * one the coordinator advertised; a loopback address advertised by a coordinator on another host
 * is refused without a try (it would reach this machine, not the coordinator). Then the node
 * routes' hello is asked with the node token: unreachable, or the token refused, is named.
 */
export async function checkCoordinator(opts: {
  /** `--coordinator`, when given. */
  explicit: string | null;
  advertised: Advertised | null;
  token: string;
  prefix: string;
  queue: string;
}): Promise<{ url: string; why: string | null }> {
  const url = (opts.explicit ?? opts.advertised?.url ?? '').replace(/\/+$/, '');
  return { url, why: await whyNot(url, opts) };
}

async function whyNot(
  url: string,
  opts: { explicit: string | null; advertised: Advertised | null; token: string; prefix: string; queue: string },
): Promise<string | null> {
  if (url === '')
    return `no coordinator has said where it listens on namespace ${opts.prefix} of ${opts.queue} yet: start gaffer serve --queue … (with the same --queue-prefix), or give this node --coordinator URL`;
  const advertised = opts.advertised;
  // a host of '' is not known (an address read from a queue entry): nothing to tell it by
  if (
    opts.explicit === null &&
    advertised !== null &&
    advertised.host !== '' &&
    isLoopbackUrl(url) &&
    advertised.host !== os.hostname()
  )
    return `the coordinator (on host ${advertised.host}) advertises ${url}, a loopback address that from this machine (${os.hostname()}) is not the coordinator: start it with --advertise-url http://<an address this machine reaches>:<port> (and --host to listen there), or give this node --coordinator URL`;
  let res: Response;
  try {
    res = await fetch(`${url}${HELLO_ROUTE}`, {
      headers: { authorization: `Bearer ${opts.token}` },
      signal: AbortSignal.timeout(HELLO_TIMEOUT_MS),
    });
    await res.text().catch(() => '');
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    return `cannot reach the coordinator at ${url} (${why}): ${opts.explicit !== null ? 'fix --coordinator' : 'the coordinator must listen on an address this machine reaches and advertise it (gaffer serve --host ADDRESS --advertise-url http://ADDRESS:PORT), or give this node --coordinator URL'}`;
  }
  if (res.status === 401)
    return `the coordinator at ${url} refused this node's credential (HTTP 401): it is unknown there or revoked — run gaffer nodes issue NAME on the coordinator and give this node what it prints (GAFFER_NODE_TOKEN or --token-file)`;
  if (!res.ok)
    return `${url} answered the node check with HTTP ${res.status}: it is not a gaffer coordinator of a cluster (gaffer serve --queue …)${opts.explicit !== null ? ': fix --coordinator' : ''}`;
  return null;
}
