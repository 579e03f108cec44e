/**
 * A small POSIX-shell reader for the command guard: it splits a command line into simple
 * commands (argv + redirections) the way `sh` would, closely enough to judge what a command
 * does. It does not expand anything; it records where expansion would happen so the guard can
 * refuse what it cannot check. Not a shell: a seatbelt reader (the sandbox and the mutation
 * audit of spec 06 are the walls).
 */

/** One shell word, quotes removed. */
export interface ShellWord {
  /** The word's text with quotes and escapes removed. */
  text: string;
  /** True when part of it was quoted (globs and `~` in quotes are literal). */
  isQuoted: boolean;
  /** True when it holds a `$var`, `${…}`, `$(…)` or backtick expansion. */
  hasExpansion: boolean;
  /** True when it holds an unquoted glob character (`*`, `?`, `[`). */
  hasGlob: boolean;
  /** True when it starts with an unquoted `~`. */
  hasTilde: boolean;
}

/** A redirection such as `> file`, `>> file`, `2> file`, `&> file`. */
export interface Redirect {
  /** The operator as written, without the fd number (`>`, `>>`, `<`, `&>`, `>|`, …). */
  op: string;
  target: ShellWord;
}

/** One simple command: words and redirections, and where it sits in a pipeline. */
export interface SimpleCommand {
  argv: ShellWord[];
  redirects: Redirect[];
  /** Index of this command in its pipeline (0 = first). */
  pipeIndex: number;
  /** The pipeline it belongs to (same number for `a | b`). */
  pipeline: number;
}

/** What a command line holds. */
export interface ParsedCommand {
  commands: SimpleCommand[];
  /** Texts inside `$(…)`, backticks, `<(…)` and `>(…)`, to be read as commands too. */
  substitutions: string[];
}

const OPERATORS = ['&&', '||', ';;', '|&', ';', '|', '&', '\n', '(', ')'];
const REDIRECT = /^(&?)(>>|>\||>&|>|<<<|<<-|<<|<>|<&|<)/;

/** Reads `$(…)` (nested parens, quotes) starting at `i` (at `$(`); returns the inner text and the end. */
function readParen(line: string, open: number): { inner: string; end: number } {
  let depth = 0;
  let i = open;
  let quote: string | null = null;
  for (; i < line.length; i++) {
    const c = line[i];
    if (quote !== null) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '\\') i++;
    else if (c === "'" || c === '"') quote = c;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return { inner: line.slice(open + 1, i), end: i + 1 };
  }
  return { inner: line.slice(open + 1), end: line.length };
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'fish']);

/** Skips here-document bodies from `i`; a body fed to a shell is kept to be read as commands. */
function skipHeredocs(
  line: string,
  i: number,
  heredocs: { delimiter: string; stripTabs: boolean; command: SimpleCommand }[],
  substitutions: string[],
): number {
  for (const doc of heredocs) {
    const body: string[] = [];
    while (i < line.length) {
      const end = line.indexOf('\n', i);
      const text = line.slice(i, end === -1 ? line.length : end);
      i = end === -1 ? line.length : end + 1;
      if ((doc.stripTabs ? text.replace(/^\t+/, '') : text) === doc.delimiter) break;
      body.push(text);
    }
    const program = doc.command.argv[0]?.text.split('/').pop() ?? '';
    if (SHELLS.has(program)) substitutions.push(body.join('\n'));
  }
  return i;
}

/** Splits `line` into simple commands. Never throws: an unclosed quote runs to the end. */
export function parseCommandLine(line: string): ParsedCommand {
  const commands: SimpleCommand[] = [];
  const substitutions: string[] = [];
  let pipeline = 0;
  let pipeIndex = 0;
  let current: SimpleCommand = { argv: [], redirects: [], pipeIndex, pipeline };
  let word: ShellWord | null = null;
  let pendingRedirect: string | null = null;
  /** Here-documents whose bodies start after the next newline. */
  let heredocs: { delimiter: string; stripTabs: boolean; command: SimpleCommand }[] = [];

  const startWord = (): ShellWord =>
    (word ??= { text: '', isQuoted: false, hasExpansion: false, hasGlob: false, hasTilde: false });
  const endWord = (): void => {
    if (word === null) return;
    if (pendingRedirect !== null) {
      current.redirects.push({ op: pendingRedirect, target: word });
      if (pendingRedirect === '<<' || pendingRedirect === '<<-')
        heredocs.push({ delimiter: word.text, stripTabs: pendingRedirect === '<<-', command: current });
      pendingRedirect = null;
    } else {
      current.argv.push(word);
    }
    word = null;
  };
  const endCommand = (isPipe: boolean): void => {
    endWord();
    if (current.argv.length > 0 || current.redirects.length > 0) commands.push(current);
    pipeIndex = isPipe ? pipeIndex + 1 : 0;
    if (!isPipe) pipeline++;
    current = { argv: [], redirects: [], pipeIndex, pipeline };
  };

  let i = 0;
  while (i < line.length) {
    const c = line[i] as string;
    if (c === '\\') {
      if (line[i + 1] === '\n') {
        i += 2;
        continue;
      }
      startWord().text += line[i + 1] ?? '';
      startWord().isQuoted = true;
      i += 2;
      continue;
    }
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      const w = startWord();
      w.text += line.slice(i + 1, end === -1 ? line.length : end);
      w.isQuoted = true;
      i = end === -1 ? line.length : end + 1;
      continue;
    }
    if (c === '"') {
      const w = startWord();
      w.isQuoted = true;
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '\\' && i + 1 < line.length) {
          w.text += line[i + 1];
          i += 2;
        } else if (line.startsWith('$(', i)) {
          const { inner, end } = readParen(line, i + 1);
          substitutions.push(inner);
          w.hasExpansion = true;
          w.text += line.slice(i, end);
          i = end;
        } else if (line[i] === '`') {
          const end = line.indexOf('`', i + 1);
          substitutions.push(line.slice(i + 1, end === -1 ? line.length : end));
          w.hasExpansion = true;
          w.text += line.slice(i, end === -1 ? line.length : end + 1);
          i = end === -1 ? line.length : end + 1;
        } else {
          if (line[i] === '$') w.hasExpansion = true;
          w.text += line[i];
          i++;
        }
      }
      i++;
      continue;
    }
    // $( … ) command substitution, <( … ) / >( … ) process substitution: the inner command runs too
    if ((c === '$' || c === '<' || c === '>') && line[i + 1] === '(') {
      const { inner, end } = readParen(line, i + 1);
      substitutions.push(inner);
      const w = startWord();
      w.hasExpansion = true;
      w.text += line.slice(i, end);
      i = end;
      continue;
    }
    if (c === '`') {
      const end = line.indexOf('`', i + 1);
      substitutions.push(line.slice(i + 1, end === -1 ? line.length : end));
      const w = startWord();
      w.hasExpansion = true;
      w.text += line.slice(i, end === -1 ? line.length : end + 1);
      i = end === -1 ? line.length : end + 1;
      continue;
    }
    if (c === '#' && word === null) {
      const end = line.indexOf('\n', i);
      i = end === -1 ? line.length : end;
      continue;
    }
    if (c === ' ' || c === '\t') {
      endWord();
      i++;
      continue;
    }
    if (c === '<' || c === '>' || (c === '&' && line[i + 1] === '>')) {
      const w = word as ShellWord | null;
      // `2>file`: the digits before the operator are its fd, not a word
      if (w !== null && !w.isQuoted && /^\d+$/.test(w.text)) word = null;
      endWord();
      const redirect = REDIRECT.exec(line.slice(i)) as RegExpExecArray;
      const op = redirect[2] as string;
      i += redirect[0].length;
      const dup = /^\s*(\d+|-)(?![^\s;&|<>()])/.exec(line.slice(i));
      if ((op === '>&' || op === '<&') && dup !== null) {
        i += dup[0].length; // fd duplication (`2>&1`): no file
        continue;
      }
      pendingRedirect = redirect[1] === '&' ? `&${op}` : op;
      continue;
    }
    const operator = OPERATORS.find((op) => line.startsWith(op, i));
    if (operator !== undefined) {
      endCommand(operator === '|' || operator === '|&');
      i += operator.length;
      if (operator === '\n' && heredocs.length > 0) {
        i = skipHeredocs(line, i, heredocs, substitutions);
        heredocs = [];
      }
      continue;
    }
    const w = startWord();
    if (c === '$') w.hasExpansion = true;
    if (c === '*' || c === '?' || c === '[') w.hasGlob = true;
    if (c === '~' && w.text === '' && !w.isQuoted) w.hasTilde = true;
    w.text += c;
    i++;
  }
  endCommand(false);
  return { commands, substitutions };
}
