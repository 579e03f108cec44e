import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_CLI_KEYS } from '../../src/domain/agent-cli-keys.js';
import { TASK_TYPES } from '../../src/domain/status.js';

// spec 05 "Routing": no code anywhere hardcodes a model, a provider, or a type → model mapping;
// adding a model is a roster edit. These read the source as text, comments removed.

const SRC = path.resolve(__dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.(ts|cjs|mjs)$/.test(name) ? [p] : [];
  });
}

/** The file with its comments blanked (a naive cut that keeps `//` inside strings such as URLs). */
function code(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** String literals of the code. */
function literals(text: string): string[] {
  return [...text.matchAll(/'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`/g)].map(
    (m) => m[1] ?? m[2] ?? m[3] ?? '',
  );
}

const MODEL_NAME =
  /\b(gpt-\d|gpt-4o|o[134]-mini|claude-(?:opus|sonnet|haiku|\d)|opus-\d|sonnet-\d|haiku-\d|qwen\d|qwen-(?:max|plus|turbo|coder)|llama-?\d|gemini-\d|deepseek-|mistral-|codestral|mixtral)/i;

/** Model names that appear in a message as an example of what to write, not as a choice. */
const EXAMPLES_IN_MESSAGES = new Set(['runners/builtin/model.ts']);

describe('no routing in code (spec 05)', () => {
  it('names no model in a string outside messages that show an example', () => {
    const found: string[] = [];
    for (const file of sources(SRC)) {
      const rel = path.relative(SRC, file);
      if (EXAMPLES_IN_MESSAGES.has(rel)) continue;
      for (const text of literals(code(file)))
        if (MODEL_NAME.test(text)) found.push(`${rel}: ${JSON.stringify(text.slice(0, 80))}`);
    }
    expect(found).toEqual([]);
  });

  it('maps no task type to a runner: no line names both a task type and an agent runner', () => {
    const types = TASK_TYPES.map((t) => `'${t}'`);
    const runners = [...AGENT_CLI_KEYS, 'builtin'].map((r) => `'${r}'`);
    const found: string[] = [];
    for (const file of sources(SRC)) {
      const rel = path.relative(SRC, file);
      code(file)
        .split('\n')
        .forEach((line, i) => {
          if (types.some((t) => line.includes(t)) && runners.some((r) => line.includes(r)))
            found.push(`${rel}:${i + 1}: ${line.trim().slice(0, 120)}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('the checks catch what they look for', () => {
    expect(literals(code('/dev/null'))).toEqual([]);
    expect(MODEL_NAME.test('claude-sonnet-4-5')).toBe(true);
    expect(MODEL_NAME.test('qwen3:8b')).toBe(true);
    expect(MODEL_NAME.test('gpt-5-codex')).toBe(true);
    expect(MODEL_NAME.test('implement')).toBe(false);
  });
});
