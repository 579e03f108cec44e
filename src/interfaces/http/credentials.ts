import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Who a credential stands for: a named owner, or null — the local user, who sees every job. */
export interface Principal {
  owner: string | null;
}

/** A credential known by its SHA-256 digest, so every comparison is between equal-length buffers. */
interface Known extends Principal {
  digest: Buffer;
}

/** Board sessions kept at most; past it the oldest is dropped (each one took a login token). */
const MAX_SESSIONS = 100;
/** Login tokens not yet used, at most (`gaffer login` mints one per call). */
const MAX_LOGIN_TOKENS = 20;

const digestOf = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
const newToken = (): string => randomBytes(32).toString('base64url');

/**
 * The index of the credential matching `presented`, comparing against every entry in constant
 * time (no early exit), so the answer's timing says nothing about how close a guess came.
 */
function indexOf(known: readonly Known[], presented: string): number {
  const digest = digestOf(presented);
  let found = -1;
  known.forEach((k, i) => {
    if (timingSafeEqual(k.digest, digest) && found < 0) found = i;
  });
  return found;
}

/**
 * What the server accepts (issue 11): the data dir's secret (the local user, everything visible),
 * the configured tokens (each its owner), and board sessions. A board session comes from a
 * one-time login token printed by `gaffer serve` (or `gaffer login`): the first GET with it spends
 * it and sets the session cookie. Everything is in memory: a restart makes new login tokens and
 * ends every session.
 */
export class Credentials {
  /** The session cookie's name: one per data dir, as cookies are shared by every port of a host. */
  readonly cookieName: string;
  /** Where the secret lives, for the refusal's fix. */
  readonly secretFile: string;
  readonly #bearers: Known[];
  readonly #sessions: Known[] = [];
  readonly #logins: Known[] = [];
  readonly #hasTokens: boolean;

  constructor(opts: { secret: string; secretFile: string; tokens: Record<string, string> }) {
    this.secretFile = opts.secretFile;
    this.cookieName = `gaffer_session_${digestOf(opts.secretFile).toString('hex').slice(0, 8)}`;
    this.#hasTokens = Object.keys(opts.tokens).length > 0;
    this.#bearers = [
      { digest: digestOf(opts.secret), owner: null },
      ...Object.entries(opts.tokens).map(([token, owner]) => ({ digest: digestOf(token), owner })),
    ];
  }

  /** True when tokens are configured (several owners). */
  get hasTokens(): boolean {
    return this.#hasTokens;
  }

  /** The principal of a bearer token (the secret or a configured token), or null. */
  bearer(token: string): Principal | null {
    const i = indexOf(this.#bearers, token);
    return i < 0 ? null : { owner: this.#bearers[i]?.owner ?? null };
  }

  /** The principal of a board session cookie's value, or null. */
  session(value: string): Principal | null {
    const i = indexOf(this.#sessions, value);
    return i < 0 ? null : { owner: this.#sessions[i]?.owner ?? null };
  }

  /** A new one-time login token for `owner`'s board session. */
  mintLogin(owner: string | null): string {
    const token = newToken();
    this.#logins.push({ digest: digestOf(token), owner });
    if (this.#logins.length > MAX_LOGIN_TOKENS) this.#logins.shift();
    return token;
  }

  /** Spends a login token: the new session's cookie value, or null when it is unknown or spent. */
  redeemLogin(token: string): string | null {
    const i = indexOf(this.#logins, token);
    if (i < 0) return null;
    const [login] = this.#logins.splice(i, 1);
    const session = newToken();
    this.#sessions.push({ digest: digestOf(session), owner: login?.owner ?? null });
    if (this.#sessions.length > MAX_SESSIONS) this.#sessions.shift();
    return session;
  }
}
