import type { DetectedState } from '../domain/status.js';
import type { StateDetection } from '../domain/runner-report.js';

/** A text rule: any of its patterns in the output proves its state (spec 04 "Detected states"). */
export interface TextStateRule {
  kind: 'text';
  state: DetectedState;
  /** Case-insensitive literals, or regexes (matched case-insensitively too). */
  patterns: readonly (string | RegExp)[];
  /** Why, in a short phrase. */
  why: string;
  /** 0..1. */
  confidence: number;
  /** When set, the rule holds only if the worker exited with one of these codes. */
  exitCodes?: readonly number[];
}

/** A repeat rule: the same error-looking line `times` times in the window. */
export interface RepeatStateRule {
  kind: 'repeat';
  state: DetectedState;
  /** What makes a line look like an error. */
  linePattern: RegExp;
  times: number;
  why: string;
  confidence: number;
}

export type StateRule = TextStateRule | RepeatStateRule;

/**
 * The rule table. Bare status numbers are whole-word regexes so that `14290 tests` is not a
 * 429. Text rules read everything a worker prints, test output included: they report, they
 * never decide (spec 04).
 */
export const STATE_RULES: readonly StateRule[] = [
  {
    kind: 'text',
    state: 'rate_limited',
    patterns: [
      'rate limit',
      'rate-limit',
      'usage limit',
      'too many requests',
      'quota exceeded',
      'exceeded your current quota',
    ],
    why: 'the output says a rate or usage limit was hit',
    confidence: 0.8,
  },
  {
    kind: 'text',
    state: 'rate_limited',
    patterns: [/\b429\b/, 'overloaded'],
    why: 'the output mentions HTTP 429 or an overloaded service',
    confidence: 0.5,
  },
  {
    kind: 'text',
    state: 'waiting_for_input',
    patterns: ['? Do you want to', '(y/n)', '[y/N]', 'Press Enter', 'Allow this action'],
    why: 'the output asks a question and waits for an answer',
    confidence: 0.7,
  },
  {
    kind: 'text',
    state: 'auth_error',
    patterns: ['not logged in', 'invalid api key', 'authentication failed'],
    why: 'the output says the worker is not authenticated',
    confidence: 0.8,
  },
  {
    kind: 'text',
    state: 'auth_error',
    patterns: [/\b401\b/],
    why: 'the output mentions HTTP 401',
    confidence: 0.5,
  },
  {
    kind: 'text',
    state: 'disk_full',
    patterns: ['ENOSPC', 'No space left on device'],
    why: 'the output says the disk is full',
    confidence: 0.9,
  },
  {
    kind: 'text',
    state: 'oom',
    patterns: ['JavaScript heap out of memory', 'MemoryError', 'Cannot allocate memory'],
    why: 'the output says memory ran out',
    confidence: 0.9,
  },
  {
    kind: 'text',
    state: 'oom',
    patterns: [/\bKilled\b/],
    why: 'a process was killed (exit 137: SIGKILL, usually the OOM killer)',
    confidence: 0.6,
    exitCodes: [137],
  },
  {
    kind: 'repeat',
    state: 'stuck',
    linePattern: /error|fail|exception|fatal|denied|cannot|unable|refused/i,
    times: 5,
    why: 'the same error line repeated',
    confidence: 0.6,
  },
];

/** The idle-prompt rule: output that stops without a newline and nothing follows for a while. */
export const IDLE_PROMPT_RULE = {
  state: 'waiting_for_input',
  why: 'the output stopped mid-line, as a prompt does, and nothing followed',
  confidence: 0.4,
} as const satisfies Pick<StateDetection, 'state' | 'why' | 'confidence'>;

const MAX_MATCHED_CHARS = 200;

interface CompiledText {
  rule: TextStateRule;
  regexes: RegExp[];
}

function escapeRegExp(literal: string): string {
  return literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function compile(pattern: string | RegExp): RegExp {
  if (typeof pattern === 'string') return new RegExp(escapeRegExp(pattern), 'gi');
  const flags = new Set([...pattern.flags, 'g', 'i']);
  flags.delete('y');
  return new RegExp(pattern.source, [...flags].join(''));
}

const compiledCache = new WeakMap<readonly StateRule[], CompiledText[]>();

function compiledTextRules(rules: readonly StateRule[]): CompiledText[] {
  let compiled = compiledCache.get(rules);
  if (compiled === undefined) {
    compiled = rules
      .filter((r): r is TextStateRule => r.kind === 'text')
      .map((rule) => ({ rule, regexes: rule.patterns.map(compile) }));
    compiledCache.set(rules, compiled);
  }
  return compiled;
}

interface Candidate {
  detection: StateDetection;
  /** Where the match starts in the text. */
  index: number;
}

function lineStartOf(text: string, index: number): number {
  return text.lastIndexOf('\n', index - 1) + 1;
}

/** More recent line wins; on one line, higher confidence; then the later match. */
function isBetter(a: Candidate, b: Candidate | null, text: string): boolean {
  if (b === null) return true;
  const lineA = lineStartOf(text, a.index);
  const lineB = lineStartOf(text, b.index);
  if (lineA !== lineB) return lineA > lineB;
  if (a.detection.confidence !== b.detection.confidence) return a.detection.confidence > b.detection.confidence;
  return a.index > b.index;
}

function clip(text: string): string {
  return text.length > MAX_MATCHED_CHARS ? `${text.slice(0, MAX_MATCHED_CHARS)}…` : text;
}

function findRepeat(rule: RepeatStateRule, text: string): Candidate | null {
  // a /g or /y pattern would make test() stateful across lines
  const linePattern =
    rule.linePattern.global || rule.linePattern.sticky
      ? new RegExp(rule.linePattern.source, rule.linePattern.flags.replace(/[gy]/g, ''))
      : rule.linePattern;
  const counts = new Map<string, { count: number; lastIndex: number }>();
  let best: { line: string; lastIndex: number } | null = null;
  let at = 0;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line !== '' && linePattern.test(line)) {
      const entry = counts.get(line) ?? { count: 0, lastIndex: at };
      entry.count += 1;
      entry.lastIndex = at;
      counts.set(line, entry);
      if (entry.count >= rule.times && (best === null || at >= best.lastIndex)) best = { line, lastIndex: at };
    }
    at += raw.length + 1;
  }
  if (best === null) return null;
  const count = counts.get(best.line)?.count ?? rule.times;
  return {
    index: best.lastIndex,
    detection: {
      state: rule.state,
      why: `${rule.why} ${count} times`,
      matched: clip(best.line),
      confidence: rule.confidence,
    },
  };
}

/**
 * Classifies a worker's newest output (its 8 KiB tail) by the rule table: the match on the
 * most recent line wins, then the higher confidence. `exitCode`, once known, enables rules
 * that need it (`Killed` + 137). Null when nothing matches.
 */
export function classifyOutput(
  tail: string,
  opts: { exitCode?: number | null; rules?: readonly StateRule[] } = {},
): StateDetection | null {
  const rules = opts.rules ?? STATE_RULES;
  let best: Candidate | null = null;
  for (const { rule, regexes } of compiledTextRules(rules)) {
    if (rule.exitCodes !== undefined && (opts.exitCode == null || !rule.exitCodes.includes(opts.exitCode))) continue;
    for (const regex of regexes) {
      regex.lastIndex = 0;
      let last: RegExpExecArray | null = null;
      for (let m = regex.exec(tail); m !== null; m = regex.exec(tail)) {
        last = m;
        if (m[0] === '') regex.lastIndex++;
      }
      if (last === null) continue;
      const candidate: Candidate = {
        index: last.index,
        detection: { state: rule.state, why: rule.why, matched: clip(last[0]), confidence: rule.confidence },
      };
      if (isBetter(candidate, best, tail)) best = candidate;
    }
  }
  for (const rule of rules) {
    if (rule.kind !== 'repeat') continue;
    const candidate = findRepeat(rule, tail);
    if (candidate !== null && isBetter(candidate, best, tail)) best = candidate;
  }
  return best?.detection ?? null;
}

/**
 * The idle-prompt rule, applied by a runner when no output came for `idleMs`: output that
 * ends without a newline looks like a prompt waiting on stdin. Null when it ends a line.
 */
export function detectIdlePrompt(tail: string, idleMs: number): StateDetection | null {
  if (tail === '' || tail.endsWith('\n')) return null;
  const lastLine = tail.slice(tail.lastIndexOf('\n') + 1).trim();
  if (lastLine === '') return null;
  return {
    state: IDLE_PROMPT_RULE.state,
    why: `${IDLE_PROMPT_RULE.why} for ${formatSeconds(idleMs)}`,
    matched: clip(lastLine),
    confidence: IDLE_PROMPT_RULE.confidence,
  };
}

/** `12 s`, `0.3 s`: milliseconds as seconds for a message. */
export function formatSeconds(ms: number): string {
  return `${ms >= 10_000 ? Math.round(ms / 1000) : Number((ms / 1000).toFixed(1))} s`;
}

/** True when two detections say the same thing (to report only changes). */
export function isSameDetection(a: StateDetection | null, b: StateDetection | null): boolean {
  return a?.state === b?.state && a?.matched === b?.matched;
}
