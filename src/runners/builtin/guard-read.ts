import { resolve } from 'node:path';
import type { Redirect, ShellWord, SimpleCommand } from './shell-words.js';
import { isInside, realPathOf } from './workspace-paths.js';

/** Where the guard is judging a command: the workspace and what lies around it. */
export interface GuardScope {
  /** The workspace's real path. */
  root: string;
  /** The worker's home directory (from its env, else the OS's). */
  home: string;
  /** Directories a command may scribble in (`/tmp`, `$TMPDIR`, `/dev/null`, …). */
  scratch: readonly string[];
}

/** One simple command as the rules see it, wrappers (`env`, `nice`, `sudo`, …) peeled off. */
export interface GuardCommand {
  /** The program's base name (`/bin/rm` → `rm`); '' when there is none. */
  program: string;
  args: ShellWord[];
  /** The wrappers peeled off, base names (`sudo`, `env`, `timeout`). */
  wrappers: string[];
  redirects: Redirect[];
  /** Programs of the whole pipeline this command is part of, in order. */
  pipeline: string[];
  /** Position in that pipeline. */
  pipeIndex: number;
  /** The directory the command runs in, as far as `cd` can be followed; null when unknown. */
  cwd: string | null;
}

/** Where a path argument lands. */
export type Place =
  | 'root' // the workspace itself
  | 'git' // the workspace's .git
  | 'inside'
  | 'scratch'
  | 'home'
  | 'outside'
  | 'unknown'; // built from a variable or substitution gaffer cannot see through

/** A located path argument. */
export interface Located {
  place: Place;
  /** The real path judged ('' when unknown). */
  abs: string;
  /** True when the last part is a match-everything glob (`*`, `.*`, `*.*`). */
  isMatchAll: boolean;
}

const WRAPPERS: Readonly<
  Record<string, { skipsOptions: boolean; takesValue?: readonly string[]; takesPositional?: number }>
> = {
  command: { skipsOptions: true },
  builtin: { skipsOptions: false },
  exec: { skipsOptions: true },
  nohup: { skipsOptions: false },
  time: { skipsOptions: true },
  nice: { skipsOptions: true, takesValue: ['-n', '--adjustment'] },
  ionice: { skipsOptions: true, takesValue: ['-c', '-n', '-p'] },
  stdbuf: { skipsOptions: true },
  timeout: { skipsOptions: true, takesValue: ['-s', '--signal', '-k', '--kill-after'], takesPositional: 1 },
  env: { skipsOptions: true, takesValue: ['-u', '--unset', '-C', '--chdir', '-S'] },
  xargs: { skipsOptions: true, takesValue: ['-I', '-n', '-P', '-L', '-d', '-E', '-s', '-a'] },
  sudo: { skipsOptions: true, takesValue: ['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U'] },
  doas: { skipsOptions: true, takesValue: ['-u', '-C'] },
  pkexec: { skipsOptions: true, takesValue: ['--user'] },
  run0: { skipsOptions: true },
};

/** The base name of a program word. */
export function baseName(text: string): string {
  return text.slice(text.lastIndexOf('/') + 1);
}

/** Peels `VAR=x`, `env`, `nice`, `timeout 5`, `sudo -u x`, … off a simple command. */
export function unwrap(command: SimpleCommand): { program: string; args: ShellWord[]; wrappers: string[] } {
  const words = [...command.argv];
  const wrappers: string[] = [];
  for (;;) {
    while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]?.text ?? '') && words[0]?.isQuoted !== true)
      words.shift();
    const first = words[0];
    if (first === undefined) return { program: '', args: [], wrappers };
    const name = baseName(first.text);
    const wrapper = WRAPPERS[name];
    if (wrapper === undefined) return { program: name, args: words.slice(1), wrappers };
    wrappers.push(name);
    words.shift();
    while (wrapper.skipsOptions && words.length > 0 && (words[0]?.text ?? '').startsWith('-')) {
      const option = words.shift()?.text ?? '';
      if (option === '--') break;
      if (wrapper.takesValue?.includes(option) === true) words.shift();
    }
    for (let n = 0; n < (wrapper.takesPositional ?? 0); n++) words.shift();
  }
}

/** Options of `args` (words before `--` that start with `-`), split so `-rf` → `r`, `f`. */
export function shortFlags(args: readonly ShellWord[]): Set<string> {
  const flags = new Set<string>();
  for (const a of args) {
    if (a.text === '--') break;
    if (/^-[A-Za-z0-9]+$/.test(a.text)) for (const f of a.text.slice(1)) flags.add(f);
  }
  return flags;
}

/** Long options of `args` (`--force`, `--recursive`), names only. */
export function longFlags(args: readonly ShellWord[]): Set<string> {
  const flags = new Set<string>();
  for (const a of args) {
    if (a.text === '--') break;
    if (a.text.startsWith('--')) flags.add(a.text.split('=')[0] as string);
  }
  return flags;
}

/** Words that are not options (everything after `--` counts). */
export function operands(args: readonly ShellWord[]): ShellWord[] {
  const out: ShellWord[] = [];
  let isAfterDashes = false;
  for (const a of args) {
    if (!isAfterDashes && a.text === '--') isAfterDashes = true;
    else if (isAfterDashes || !a.text.startsWith('-') || a.text === '-') out.push(a);
  }
  return out;
}

const MATCH_ALL = /^[.*?]*\*[.*?]*$|^\.\[!.\]\*$|^\.\?\?\*$/;
const KNOWN_VARS = /^\$(?:\{(HOME|PWD|TMPDIR)\}|(HOME|PWD|TMPDIR))(?=\/|$)/;

/** Where the path `word` lands when run from `cwd`. */
export function locate(word: ShellWord, cwd: string | null, scope: GuardScope, env: NodeJS.ProcessEnv): Located {
  let text = word.text;
  let base = cwd;
  if (word.hasTilde) {
    const tilde = /^~([^/]*)/.exec(text);
    if (tilde?.[1] !== undefined && tilde[1] !== '' && tilde[1] !== '+')
      return { place: 'home', abs: `~${tilde[1]}`, isMatchAll: false };
    text = scope.home + text.slice(tilde?.[0].length ?? 1);
  } else if (word.hasExpansion) {
    const known = KNOWN_VARS.exec(text);
    const name = known?.[1] ?? known?.[2];
    const value =
      name === 'HOME' ? scope.home : name === 'PWD' ? cwd : name === 'TMPDIR' ? (env.TMPDIR ?? '/tmp') : null;
    if (known === null || value === null || /[$`]/.test(text.slice(known[0].length)))
      return { place: 'unknown', abs: '', isMatchAll: false };
    text = value + text.slice(known[0].length);
  }
  if (base === null && !text.startsWith('/')) return { place: 'unknown', abs: '', isMatchAll: false };
  base ??= scope.root;
  let lexical = resolve(base, text);
  let isMatchAll = false;
  if (word.hasGlob) {
    const parts = lexical.split('/');
    const at = parts.findIndex((p) => /[*?[]/.test(p));
    isMatchAll = at === parts.length - 1 && MATCH_ALL.test(parts[at] ?? '');
    lexical = parts.slice(0, at).join('/') || '/';
    if (!isMatchAll) {
      // `dist/*.js`: the glob stays below its directory; judge that directory as a place inside
      const place = placeOf(realPathOf(lexical) ?? lexical, scope);
      return { place: place === 'root' ? 'inside' : place, abs: lexical, isMatchAll };
    }
  }
  const abs = realPathOf(lexical) ?? lexical;
  return { place: placeOf(abs, scope), abs, isMatchAll };
}

/** The place of a real absolute path. */
export function placeOf(abs: string, scope: GuardScope): Place {
  if (abs === scope.root) return 'root';
  if (isInside(`${scope.root}/.git`, abs)) return 'git';
  if (isInside(scope.root, abs)) return 'inside';
  if (scope.scratch.some((dir) => isInside(dir, abs) && abs !== dir)) return 'scratch';
  if (['/dev/null', '/dev/stdout', '/dev/stderr', '/dev/tty'].includes(abs) || abs.startsWith('/dev/fd/'))
    return 'scratch';
  if (isInside(scope.home, abs)) return 'home';
  return 'outside';
}
