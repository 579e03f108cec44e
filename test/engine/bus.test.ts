import { describe, expect, it, vi } from 'vitest';
import { JobBus } from '../../src/engine/bus.js';

describe('JobBus workspace releases', () => {
  it('wakes only the jobs the releasing job kept waiting, and counts its waiters until they leave', () => {
    const bus = new JobBus();
    const behindA = vi.fn();
    const alsoBehindA = vi.fn();
    const behindB = vi.fn();
    const offA = bus.onRelease('job-a', behindA);
    bus.onRelease('job-a', alsoBehindA);
    const offB = bus.onRelease('job-b', behindB);
    expect(bus.listenerCount).toBe(3);

    bus.announceRelease('job-b');
    expect(behindB).toHaveBeenCalledTimes(1);
    expect(behindA).not.toHaveBeenCalled();

    offA();
    bus.announceRelease('job-a');
    expect(behindA).not.toHaveBeenCalled();
    expect(alsoBehindA).toHaveBeenCalledTimes(1);
    bus.announceRelease('job-c'); // nobody waits on it
    offB();
    expect(bus.listenerCount).toBe(1);
  });
});
