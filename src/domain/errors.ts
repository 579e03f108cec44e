/** Every refusal code of spec 02, on every door. */
export type ErrorCode =
  | 'invalid_request'
  | 'not_supported'
  | 'unknown_runner'
  | 'runner_not_installed'
  | 'runner_disabled'
  | 'no_runner'
  | 'model_endpoint_missing'
  | 'needs_detail'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'budget_paused'
  | 'breaker_open'
  | 'conflict'
  | 'payload_too_large'
  | 'headers_too_large'
  | 'request_timeout'
  | 'internal';

/** The one error shape of spec 02. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; field?: string; [extra: string]: unknown };
}

/** gaffer's one internal error type: a string `code`, a message naming the bad value and the fix. */
export class GafferError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly extra: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, field?: string, extra: Record<string, unknown> = {}) {
    super(message);
    this.name = 'GafferError';
    this.code = code;
    this.field = field;
    this.extra = extra;
  }

  /** The spec 02 error body. */
  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message, ...this.extra };
    if (this.field !== undefined) error.field = this.field;
    return { error };
  }
}

/** Turns anything thrown into a GafferError; a fault of our own is `internal`, never the caller's. */
export function toGafferError(err: unknown): GafferError {
  if (err instanceof GafferError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new GafferError('internal', `internal error: ${message}`);
}
