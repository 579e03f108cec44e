import { describe, expect, it } from 'vitest';
import type { DetectedState } from '../../src/domain/status.js';
import { STATE_RULES, classifyOutput, detectIdlePrompt } from '../../src/runners/states.js';

const cases: { name: string; tail: string; exitCode?: number; state: DetectedState; matched: string }[] = [
  {
    name: 'rate limit',
    tail: 'calling api\nError: Rate limit reached for requests\n',
    state: 'rate_limited',
    matched: 'Rate limit',
  },
  {
    name: 'usage limit',
    tail: 'Claude usage limit reached. Resets at 5pm\n',
    state: 'rate_limited',
    matched: 'usage limit',
  },
  { name: 'HTTP 429', tail: 'HTTP/1.1 429\n', state: 'rate_limited', matched: '429' },
  { name: 'too many requests', tail: 'Too Many Requests\n', state: 'rate_limited', matched: 'Too Many Requests' },
  { name: 'quota exceeded', tail: 'QUOTA EXCEEDED for project\n', state: 'rate_limited', matched: 'QUOTA EXCEEDED' },
  { name: 'overloaded', tail: '{"type":"overloaded_error"}\n', state: 'rate_limited', matched: 'overloaded' },
  {
    name: '? Do you want to',
    tail: '? Do you want to overwrite it?\n',
    state: 'waiting_for_input',
    matched: '? Do you want to',
  },
  { name: '(y/n)', tail: 'Continue (Y/N) ', state: 'waiting_for_input', matched: '(Y/N)' },
  { name: '[y/N]', tail: 'Proceed? [y/N]', state: 'waiting_for_input', matched: '[y/N]' },
  { name: 'Press Enter', tail: 'press enter to continue', state: 'waiting_for_input', matched: 'press enter' },
  {
    name: 'Allow this action',
    tail: 'Allow this action? 1. yes 2. no\n',
    state: 'waiting_for_input',
    matched: 'Allow this action',
  },
  { name: 'not logged in', tail: 'You are not logged in. Run /login\n', state: 'auth_error', matched: 'not logged in' },
  {
    name: 'invalid api key',
    tail: 'Invalid API key · Fix external API key\n',
    state: 'auth_error',
    matched: 'Invalid API key',
  },
  { name: 'HTTP 401', tail: 'status 401 from server\n', state: 'auth_error', matched: '401' },
  {
    name: 'authentication failed',
    tail: 'fatal: Authentication failed for repo\n',
    state: 'auth_error',
    matched: 'Authentication failed',
  },
  { name: 'ENOSPC', tail: 'Error: ENOSPC, write failed\n', state: 'disk_full', matched: 'ENOSPC' },
  {
    name: 'No space left on device',
    tail: 'cp: error writing: No space left on device\n',
    state: 'disk_full',
    matched: 'No space left on device',
  },
  {
    name: 'heap out of memory',
    tail: 'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n',
    state: 'oom',
    matched: 'JavaScript heap out of memory',
  },
  { name: 'MemoryError', tail: 'Traceback...\nMemoryError\n', state: 'oom', matched: 'MemoryError' },
  {
    name: 'Killed with exit 137',
    tail: 'sh: line 1:  4242 Killed  python train.py\n',
    exitCode: 137,
    state: 'oom',
    matched: 'Killed',
  },
  {
    name: 'the same error line 5 times',
    tail: 'try\nError: connect ECONNREFUSED 127.0.0.1:5432\n'.repeat(5),
    state: 'stuck',
    matched: 'Error: connect ECONNREFUSED 127.0.0.1:5432',
  },
];

describe('classifyOutput', () => {
  it.each(cases)('detects $state from "$name"', ({ tail, exitCode, state, matched }) => {
    const detection = classifyOutput(tail, { exitCode });
    expect(detection?.state).toBe(state);
    expect(detection?.matched).toBe(matched);
    expect(detection?.why).toMatch(/\w/);
    expect(detection?.confidence).toBeGreaterThan(0);
    expect(detection?.confidence).toBeLessThanOrEqual(1);
  });

  it.each([
    { name: 'plain output', tail: 'compiling\n3 tests passed\n' },
    { name: 'a number that contains 429', tail: 'ran 14290 tests\n' },
    { name: 'Killed without exit 137', tail: 'Killed\n' },
    { name: 'an error line 4 times', tail: 'Error: boom\n'.repeat(4) },
    { name: 'a non-error line 10 times', tail: 'waiting\n'.repeat(10) },
  ])('finds nothing in $name', ({ tail }) => {
    expect(classifyOutput(tail, { exitCode: 1 })).toBeNull();
  });

  it('does not count Killed unless the exit code is 137', () => {
    expect(classifyOutput('Killed\n', { exitCode: 1 })).toBeNull();
    expect(classifyOutput('Killed\n')).toBeNull();
    expect(classifyOutput('Killed\n', { exitCode: 137 })?.state).toBe('oom');
  });

  it('picks the match on the most recent line', () => {
    expect(classifyOutput('429 Too Many Requests\nthen: not logged in\n')?.state).toBe('auth_error');
    expect(classifyOutput('not logged in\nlater: 429 Too Many Requests\n')?.state).toBe('rate_limited');
  });

  it('picks the higher confidence on the same line', () => {
    const detection = classifyOutput('got 401 because of an invalid api key\n');
    expect(detection).toMatchObject({ state: 'auth_error', matched: 'invalid api key' });
  });

  it('counts a repeated error line anywhere in the window, not only in a row', () => {
    const tail = Array.from({ length: 5 }, (_, i) => `step ${i}\nERROR: lock held by another process\n`).join('');
    expect(classifyOutput(tail)).toMatchObject({ state: 'stuck', matched: 'ERROR: lock held by another process' });
  });

  it('keeps the rule table as data: every state has a rule', () => {
    const states = new Set(STATE_RULES.map((r) => r.state));
    expect([...states].sort()).toEqual([
      'auth_error',
      'disk_full',
      'oom',
      'rate_limited',
      'stuck',
      'waiting_for_input',
    ]);
  });
});

describe('detectIdlePrompt', () => {
  it('reads output that stops mid-line as a prompt', () => {
    expect(detectIdlePrompt('starting\nEnter the passphrase: ', 10_000)).toMatchObject({
      state: 'waiting_for_input',
      matched: 'Enter the passphrase:',
    });
  });

  it('finds nothing when the output ends a line', () => {
    expect(detectIdlePrompt('done\n', 10_000)).toBeNull();
    expect(detectIdlePrompt('', 10_000)).toBeNull();
  });
});
