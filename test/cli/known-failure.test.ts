// Issue 33: `--known-failure` puts `verify.known_failures` in the request, beside the command it verifies with.
import { describe, expect, it } from 'vitest';
import { buildRequest } from '../../src/interfaces/cli/commands/dispatch.js';
import { parseJobRequest } from '../../src/domain/request.js';

const runners = { defaultRunner: null, available: ['shell'] };

describe('gaffer dispatch --known-failure', () => {
  it('with --verify: the object form of verify carries the command and the known failures', () => {
    const body = buildRequest(undefined, {
      workspace: '/tmp/x',
      command: 'true',
      verify: 'npm test',
      knownFailure: ['test/a.js > *', 'b'],
    });
    expect(body.verify).toEqual({ command: 'npm test', known_failures: ['test/a.js > *', 'b'] });
    const spec = parseJobRequest(body, runners);
    expect(spec.verify).toEqual({ mode: 'command', command: 'npm test' });
    expect(spec.known_failures).toEqual(['test/a.js > *', 'b']);
  });

  it('without --verify: auto, with the known failures', () => {
    const spec = parseJobRequest(
      buildRequest(undefined, { workspace: '/tmp/x', command: 'true', knownFailure: ['x'] }),
      runners,
    );
    expect(spec.verify).toEqual({ mode: 'auto' });
    expect(spec.known_failures).toEqual(['x']);
  });

  it('a known failure that is not a string, or too many, is refused naming the field', () => {
    expect(() =>
      parseJobRequest(
        { workspace: '/tmp/x', verify: { known_failures: [3] }, tasks: [{ instruction: 'x', command: 'true' }] },
        runners,
      ),
    ).toThrow(/verify/);
    expect(() =>
      parseJobRequest(
        {
          workspace: '/tmp/x',
          verify: { known_failures: Array.from({ length: 201 }, (_, i) => `t${i}`) },
          tasks: [{ instruction: 'x', command: 'true' }],
        },
        runners,
      ),
    ).toThrow(/verify/);
  });
});
