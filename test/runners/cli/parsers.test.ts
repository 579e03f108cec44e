import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLines } from '../../../src/runners/cli/parse-state.js';
import { getCliProfile } from '../../../src/runners/cli/profiles.js';

const DIR = 'test/runners/cli/recordings';

/** A recording of a real CLI run (stdout then stderr lines), parsed with the profile's parser. */
function parseRecording(key: string, name: string) {
  const profile = getCliProfile(key);
  if (profile === undefined) throw new Error(key);
  const lines = [
    ...readFileSync(join(DIR, `${key}-${name}.stdout.jsonl`), 'utf8').split('\n'),
    ...readFileSync(join(DIR, `${key}-${name}.stderr.txt`), 'utf8').split('\n'),
  ];
  return parseLines(profile.parser, lines);
}

describe('parsing recorded real output of a run that writes a file', () => {
  it('claude: final text, session, served model, usage, cost, one tool call', () => {
    const p = parseRecording('claude', 'write');
    expect(p).toMatchObject({
      text: 'Wrote hello.txt.',
      model: 'claude-sonnet-4-5',
      isError: false,
      rateLimited: false,
      toolCalls: 1,
      failedCalls: 0,
      sawEnd: true,
      rounds: 2,
    });
    expect(p.session).toMatch(/^[0-9a-f-]{36}$/);
    expect(p.inputTokens).toBeGreaterThan(0);
    expect(p.costUsd).toEqual(expect.any(Number));
  });

  it('qwen: claude-shaped, no cost', () => {
    const p = parseRecording('qwen', 'write');
    expect(p).toMatchObject({
      text: 'Wrote hello.txt.',
      model: 'qwen3-coder-plus',
      isError: false,
      toolCalls: 1,
      costUsd: null,
      sawEnd: true,
      inputTokens: 39831,
      outputTokens: 24,
    });
    expect(p.session).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('codex: thread id as session, agent message, usage; no model and no cost', () => {
    const p = parseRecording('codex', 'write');
    expect(p).toMatchObject({
      text: 'Wrote hello.txt.',
      model: null,
      costUsd: null,
      isError: false,
      toolCalls: 1,
      inputTokens: 19566,
      outputTokens: 22,
      sawEnd: true,
    });
    expect(p.session).toBe('01a22a38-8f60-7803-b3c5-afa5326fd52c');
  });

  it('gemini: the streamed deltas joined, the served model from stats', () => {
    const p = parseRecording('gemini', 'write');
    expect(p).toMatchObject({
      text: 'Wrote hello.txt.',
      model: 'gemini-2.5-pro',
      isError: false,
      toolCalls: 1,
      inputTokens: 24512,
      outputTokens: 24,
      sawEnd: true,
    });
    expect(p.session).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('opencode: sessionID, the last text part, tokens and cost summed over steps; no model', () => {
    const p = parseRecording('opencode', 'write');
    expect(p).toMatchObject({
      text: 'Wrote hello.txt.',
      model: null,
      isError: false,
      toolCalls: 1,
      rounds: 2,
      inputTokens: 7694 + 7774,
      outputTokens: 23,
      costUsd: 0,
    });
    expect(p.session).toMatch(/^ses_/);
  });
});

describe('parsing recorded real output of a rate-limited run (the structured error channel)', () => {
  it('claude: api_error_status 429 is a rate limit', () => {
    expect(parseRecording('claude', '429')).toMatchObject({ isError: true, apiStatus: 429, rateLimited: true });
  });

  it('codex: turn.failed naming status 429 is a rate limit', () => {
    expect(parseRecording('codex', '429')).toMatchObject({ isError: true, apiStatus: 429, rateLimited: true });
  });

  it('gemini: an error result with the suggested retry time (the 429 itself comes from its exit code, 173)', () => {
    expect(parseRecording('gemini', '429')).toMatchObject({ isError: true, retryAfterS: 42 });
  });

  it('qwen: an API error that exits 0 with is_error false is still an error, read from the result text', () => {
    const p = parseRecording('qwen', '429');
    expect(p.isError).toBe(true);
    expect(p.error).toContain('Connection error');
    expect(p.rateLimited).toBe(false);
  });

  it('qwen: an [API Error: …429…] result is a rate limit', () => {
    const profile = getCliProfile('qwen');
    const line = JSON.stringify({
      type: 'result',
      subtype: 'success',
      is_error: false,
      session_id: 's',
      result: '[API Error: 429 Rate limit reached for requests]',
    });
    expect(parseLines(profile?.parser ?? (() => undefined), [line])).toMatchObject({
      isError: true,
      apiStatus: 429,
      rateLimited: true,
    });
  });

  it('text that merely mentions 429 in an answer decides nothing', () => {
    const profile = getCliProfile('claude');
    const line = JSON.stringify({
      type: 'result',
      subtype: 'success',
      is_error: false,
      session_id: 's',
      result: 'I fixed the 429 rate limit handler.',
    });
    expect(parseLines(profile?.parser ?? (() => undefined), [line])).toMatchObject({
      isError: false,
      rateLimited: false,
    });
  });
});
