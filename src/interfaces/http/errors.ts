import type { Context } from 'hono';
import { STATUS_CODES } from 'node:http';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { GafferError, toGafferError, type ErrorCode } from '../../domain/errors.js';

/** The one place an error becomes an HTTP status (spec 02 "Errors"). */
export const HTTP_STATUS: Record<ErrorCode, ContentfulStatusCode> = {
  invalid_request: 400,
  not_supported: 400,
  unknown_runner: 400,
  runner_not_installed: 400,
  runner_disabled: 400,
  no_runner: 400,
  model_endpoint_missing: 400,
  needs_detail: 422,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  budget_paused: 429,
  breaker_open: 429,
  conflict: 409,
  payload_too_large: 413,
  headers_too_large: 431,
  request_timeout: 408,
  internal: 500,
};

/** Answers any thrown value with the spec 02 error body; an internal fault never blames the caller. */
export function errorResponse(c: Context, err: unknown): Response {
  const error = toGafferError(err);
  if (error.code === 'internal')
    process.stderr.write(
      `gaffer: internal error on ${c.req.method} ${c.req.path}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
  const retry = error.extra.retry_after_s;
  if (typeof retry === 'number') c.header('Retry-After', String(Math.ceil(retry)));
  return c.json(error.toBody(), HTTP_STATUS[error.code]);
}

/**
 * A whole HTTP/1.1 response carrying the spec 02 error body, for what Node's parser refuses before
 * any handler runs (431, 408, a malformed request): it closes the connection.
 */
export function rawErrorResponse(error: GafferError): string {
  const status = HTTP_STATUS[error.code];
  const body = JSON.stringify(error.toBody());
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** A refusal for a malformed query value. */
export function badQuery(field: string, why: string, value: unknown): GafferError {
  return new GafferError('invalid_request', `${field}: ${why}, got ${JSON.stringify(value)}`, field);
}
