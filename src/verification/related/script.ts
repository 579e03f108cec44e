// package.json's scripts.test as words: related scope rewrites the command only when it is one plain command
// whose flags it can keep (spec 03 "Scope").

/** A package.json script as one command: its leading `NAME=value` words and the rest. */
export interface Script {
  /** `NAME=value` words before the command. */
  env: [string, string][];
  words: string[];
}

/** Splits a package.json script into shell words; null when it is more than one plain command. */
export function parseScript(script: string): Script | null {
  const words: string[] = [];
  let word: string | null = null;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < script.length; i++) {
    const c = script[i] ?? '';
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && /["\\$`]/.test(script[i + 1] ?? ''))
        word = (word ?? '') + (script[++i] ?? '');
      else if (quote === '"' && /[$`]/.test(c)) return null;
      else word = (word ?? '') + c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= '';
    } else if (c === '\\') word = (word ?? '') + (script[++i] ?? '');
    else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
      if (c === '\n') return null;
    } else if (/[;&|<>()$`]/.test(c)) return null;
    else word = (word ?? '') + c;
  }
  if (quote) return null;
  if (word !== null) words.push(word);
  const env: [string, string][] = [];
  while (words.length > 0 && /^[A-Za-z_]\w*=/.test(words[0] ?? '')) {
    const assignment = words.shift() ?? '';
    const eq = assignment.indexOf('=');
    env.push([assignment.slice(0, eq), assignment.slice(eq + 1)]);
  }
  if (words[0] === 'npx') words.shift();
  return words.length > 0 ? { env, words } : null;
}

/** Splits a runner's arguments into flags (kept, with their values) and positionals. */
export function splitArgs(args: string[], valueFlags: Set<string>): { flags: string[]; positionals: string[] } {
  const flags: string[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (!arg.startsWith('-')) positionals.push(arg);
    else if (valueFlags.has(arg) && i + 1 < args.length) flags.push(arg, args[++i] ?? '');
    else flags.push(arg);
  }
  return { flags, positionals };
}
