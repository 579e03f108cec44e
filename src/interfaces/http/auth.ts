import type { Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { GafferError } from '../../domain/errors.js';
import type { Credentials, Principal } from './credentials.js';

/**
 * The principal of a request: its `Authorization: Bearer` token (the data dir's secret or a
 * configured token), else its board session cookie. Null when it carries neither; a bearer token
 * that is not known is refused outright (never read past for a cookie).
 */
export function authenticate(c: Context, credentials: Credentials): Principal | null {
  const token = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '')?.[1]?.trim();
  if (token !== undefined) {
    const principal = credentials.bearer(token);
    if (principal === null)
      throw new GafferError('unauthorized', `the bearer token is not known: ${howToAuthenticate(credentials)}`);
    return principal;
  }
  const session = getCookie(c, credentials.cookieName);
  if (session === undefined) return null;
  const principal = credentials.session(session);
  if (principal === null)
    throw new GafferError('unauthorized', `the board session is not known (gaffer restarted?): ${howToLogIn()}`);
  return principal;
}

/**
 * Whether a request may go without a credential: only `GET /api/health` (a liveness probe: counts
 * and the version, nothing of any job), and only while no tokens are configured — with tokens,
 * every route needs one, as before.
 */
export function isOpenRoute(c: Context, credentials: Credentials): boolean {
  return !credentials.hasTokens && c.req.method === 'GET' && c.req.path === '/api/health';
}

/** The refusal of a request that carries no credential. */
export function missingCredential(c: Context, credentials: Credentials): GafferError {
  const board = c.req.path === '/' ? ` A browser: ${howToLogIn()}` : '';
  return new GafferError('unauthorized', `a credential is required: ${howToAuthenticate(credentials)}.${board}`);
}

/**
 * `GET /?login=<token>`: spends the one-time login token, sets the session cookie (HttpOnly,
 * SameSite=Strict) and redirects to `/` without the token in the address bar.
 */
export function redeemLogin(c: Context, credentials: Credentials, token: string): Response {
  const session = credentials.redeemLogin(token);
  if (session === null)
    throw new GafferError('unauthorized', `the login token is spent or not known: ${howToLogIn()}`, 'login');
  setCookie(c, credentials.cookieName, session, { httpOnly: true, sameSite: 'Strict', path: '/' });
  c.header('cache-control', 'no-store');
  c.header('referrer-policy', 'no-referrer');
  return c.redirect('/', 303);
}

function howToAuthenticate(credentials: Credentials): string {
  const tokens = credentials.hasTokens ? 'your configured token, or ' : '';
  // never the secret's path: a refusal goes to whoever asked, and the coordinator's disk layout is not theirs to learn
  return `send Authorization: Bearer <${tokens}the server's secret> — the secret is the file \`secret\` in the data dir of the \`gaffer serve\` you are calling; the gaffer CLI run with that data dir reads it and sends it by itself`;
}

function howToLogIn(): string {
  return 'open the login URL `gaffer serve` printed (each works once), or run `gaffer login` for a new one';
}
