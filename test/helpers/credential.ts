import { readSecret } from '../../src/config/local-secret.js';

/** The data dir secret of each server a test started, by origin. */
const secrets = new Map<string, string>();

/** Remembers the secret of the server at `url` (read from its data dir) for {@link withCredential}. */
export function rememberServer(url: string, dataDir: string): string {
  const secret = readSecret(dataDir);
  if (secret === null) throw new Error(`no secret in ${dataDir}: the server at ${url} did not make one`);
  secrets.set(new URL(url).origin, secret);
  return secret;
}

/** The secret of the server at `url`, which a test started. */
export function secretOf(url: string): string {
  const secret = secrets.get(new URL(url).origin);
  if (secret === undefined) throw new Error(`no secret remembered for ${url}`);
  return secret;
}

/** `Authorization: Bearer <secret>` for the server at `url`. */
export function bearerFor(url: string): Record<string, string> {
  return { authorization: `Bearer ${secretOf(url)}` };
}

/**
 * `headers` with the server's secret as the bearer token, as the gaffer CLI sends it, unless the
 * test names its own `authorization`; `authorization: ''` sends none at all.
 */
export function withCredential(url: string, headers: Record<string, string> = {}): Record<string, string> {
  const named = Object.keys(headers).find((k) => k.toLowerCase() === 'authorization');
  if (named === undefined) return secrets.has(new URL(url).origin) ? { ...bearerFor(url), ...headers } : headers;
  if (headers[named] !== '') return headers;
  const { [named]: _none, ...rest } = headers;
  return rest;
}
