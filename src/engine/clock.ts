/** Wall-clock timestamps for records: seconds since the epoch, with fractions (spec 01). */
export const epochS = (): number => Date.now() / 1000;

/** Monotonic milliseconds for durations and timeouts: never jumps with the wall clock. */
export const monotonicMs = (): number => performance.now();
