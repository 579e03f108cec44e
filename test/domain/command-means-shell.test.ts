// Issue 34: a task's `command` with no runner named runs on the shell, whatever runner is the default.
import { describe, expect, it } from 'vitest';
import { parseJobRequest } from '../../src/domain/request.js';

describe('a command without a runner (issue 34)', () => {
  it('is the shell, also when a default runner (a model) is configured: the command is never dropped', () => {
    const spec = parseJobRequest({ workspace: '/tmp/x', tasks: [{ instruction: 'make x', command: 'touch x' }] }, { defaultRunner: 'builtin', available: ['builtin', 'shell'] });
    expect(spec.tasks[0]).toMatchObject({ runner: 'shell', command: 'touch x' });
    const named = parseJobRequest({ workspace: '/tmp/x', tasks: [{ instruction: 'make x' }] }, { defaultRunner: 'builtin', available: ['builtin', 'shell'] });
    expect(named.tasks[0]).toMatchObject({ runner: 'builtin', command: null });
  });
});
