import { GafferError } from '../../src/domain/errors.js';

/** The GafferError `fn` throws; anything else it throws is rethrown, and not throwing fails the test. */
export function refusal(fn: () => unknown): GafferError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GafferError) return err;
    throw err;
  }
  throw new Error('expected a refusal, and nothing was refused');
}
