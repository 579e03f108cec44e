import { homedir, tmpdir } from 'node:os';
import { resolve } from 'node:path';
import {
  baseName,
  locate,
  longFlags,
  operands,
  shortFlags,
  unwrap,
  type GuardCommand,
  type GuardScope,
  type Located,
} from './guard-read.js';
import { parseCommandLine, type ShellWord, type SimpleCommand } from './shell-words.js';
import { realWorkspace } from './workspace-paths.js';

/** What a rule sees: the command, where it runs, and a way to place its path arguments. */
export interface RuleInput {
  cmd: GuardCommand;
  scope: GuardScope;
  /** Where a word of this command lands. */
  at(word: ShellWord): Located;
}

/**
 * One rule of the command guard (spec 04): a name, the reason told to the model, and a test
 * that returns what it found (a path, a flag) when the command breaks the rule, else false.
 */
export interface CommandRule {
  id: string;
  why: string;
  test(input: RuleInput): string | false;
}

/** A rule on the whole command line (shapes no single command shows: fork bombs, `sh <(curl …)`). */
export interface LineRule {
  id: string;
  why: string;
  pattern: RegExp;
}

/** The guard's answer. */
export type GuardVerdict = { ok: true } | { ok: false; rule: string; why: string };

const DOWNLOADERS = new Set(['curl', 'wget', 'fetch', 'aria2c', 'http', 'xh']);
const INTERPRETERS = new Set([
  'sh',
  'bash',
  'dash',
  'zsh',
  'ksh',
  'ash',
  'fish',
  'python',
  'python3',
  'perl',
  'ruby',
  'node',
  'php',
  'source',
  '.',
]);
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash']);
const WRITE_ALL_OPERANDS = new Set([
  'tee',
  'touch',
  'mkdir',
  'rmdir',
  'truncate',
  'chmod',
  'chown',
  'chgrp',
  'unlink',
  'shred',
  'mv',
]);
const WRITE_LAST_OPERAND = new Set(['cp', 'install', 'ln', 'rsync', 'scp']);
const WRITE_REDIRECTS = new Set(['>', '>>', '>|', '&>', '&>>', '<>', '>&', '&>&']);
const POWER = new Set(['shutdown', 'reboot', 'halt', 'poweroff', 'telinit']);
const DISK = /^(mkfs(\..+)?|mke2fs|mkswap|fdisk|sfdisk|cfdisk|parted|wipefs|sgdisk)$/;
const GIT_VALUE_OPTIONS = new Set([
  '-C',
  '-c',
  '--git-dir',
  '--work-tree',
  '--namespace',
  '--exec-path',
  '--config-env',
]);

/** The git subcommand and its arguments, past git's own options (`git -C x -c k=v push`). */
function gitCall(cmd: GuardCommand): { sub: string; args: ShellWord[] } | null {
  if (cmd.program !== 'git') return null;
  const args = [...cmd.args];
  while (args.length > 0 && (args[0]?.text ?? '').startsWith('-')) {
    const option = args.shift()?.text ?? '';
    if (GIT_VALUE_OPTIONS.has(option)) args.shift();
  }
  const sub = args.shift()?.text ?? '';
  return { sub, args };
}

/** Paths a write-type command writes to (redirections included). */
function writeTargets(cmd: GuardCommand): ShellWord[] {
  const targets = cmd.redirects.filter((r) => WRITE_REDIRECTS.has(r.op)).map((r) => r.target);
  const ops = operands(cmd.args);
  if (WRITE_ALL_OPERANDS.has(cmd.program))
    targets.push(
      ...(cmd.program === 'chmod' || cmd.program === 'chown' || cmd.program === 'chgrp' ? ops.slice(1) : ops),
    );
  if (WRITE_LAST_OPERAND.has(cmd.program)) {
    const toDir = cmd.args.findIndex((a) => a.text === '-t' || a.text.startsWith('--target-directory'));
    const dir =
      toDir === -1
        ? undefined
        : cmd.args[toDir]?.text.includes('=') === true
          ? { ...(cmd.args[toDir] as ShellWord), text: (cmd.args[toDir] as ShellWord).text.split('=')[1] ?? '' }
          : cmd.args[toDir + 1];
    const last = dir ?? ops.at(-1);
    if (last !== undefined && ops.length >= 2) targets.push(last);
  }
  if (
    (cmd.program === 'sed' || cmd.program === 'perl') &&
    cmd.args.some((a) => /^-[a-zA-Z]*i/.test(a.text) || a.text.startsWith('--in-place'))
  ) {
    targets.push(
      ...operands(cmd.args).slice(
        cmd.program === 'sed' && !cmd.args.some((a) => a.text === '-e' || a.text === '-f') ? 1 : 0,
      ),
    );
  }
  if (cmd.program === 'dd') {
    for (const a of cmd.args) if (a.text.startsWith('of=')) targets.push({ ...a, text: a.text.slice(3) });
  }
  return targets;
}

function firstAt(input: RuleInput, words: ShellWord[], places: readonly Located['place'][]): string | false {
  for (const w of words) {
    const where = input.at(w);
    if (places.includes(where.place)) return w.text;
  }
  return false;
}

function isRecursive(cmd: GuardCommand): boolean {
  const short = shortFlags(cmd.args);
  return short.has('r') || short.has('R') || longFlags(cmd.args).has('--recursive');
}

/**
 * The command guard's rule table (spec 04). Order matters only for which reason is told when
 * a command breaks several. Ordinary work (`rm -rf node_modules`, `git diff`, `npm test`,
 * `sed -i` on workspace files, writes to /tmp) passes every rule.
 */
export const COMMAND_RULES: readonly CommandRule[] = [
  {
    id: 'sudo',
    why: 'runs as another user (root); a worker runs as itself',
    test: ({ cmd }) =>
      ['sudo', 'doas', 'pkexec', 'run0'].find((w) => cmd.wrappers.includes(w)) ?? (cmd.program === 'su' ? 'su' : false),
  },
  {
    id: 'disk',
    why: 'formats or repartitions a disk',
    test: ({ cmd }) => (DISK.test(cmd.program) ? cmd.program : false),
  },
  {
    id: 'dd-device',
    why: 'writes raw bytes to a device',
    test: ({ cmd }) => {
      const of = cmd.program === 'dd' ? cmd.args.find((a) => a.text.startsWith('of=/dev/')) : undefined;
      return of !== undefined && !['of=/dev/null', 'of=/dev/stdout', 'of=/dev/stderr'].includes(of.text)
        ? of.text
        : false;
    },
  },
  {
    id: 'rm-no-preserve-root',
    why: 'rm --no-preserve-root exists only to delete /',
    test: ({ cmd }) =>
      cmd.program === 'rm' && longFlags(cmd.args).has('--no-preserve-root') ? '--no-preserve-root' : false,
  },
  {
    id: 'rm-workspace',
    why: 'deletes the whole workspace (or everything in it); delete the files you mean by name',
    test: (input) =>
      input.cmd.program === 'rm' || input.cmd.program === 'rmdir'
        ? firstAt(input, operands(input.cmd.args), ['root'])
        : false,
  },
  {
    id: 'rm-git',
    why: "deletes the repository's .git (its history)",
    test: (input) => (input.cmd.program === 'rm' ? firstAt(input, operands(input.cmd.args), ['git']) : false),
  },
  {
    id: 'rm-outside',
    why: 'deletes outside the workspace; only files inside the workspace may be deleted',
    test: (input) =>
      input.cmd.program === 'rm' ? firstAt(input, operands(input.cmd.args), ['home', 'outside', 'scratch']) : false,
  },
  {
    id: 'rm-unchecked',
    why: 'rm -r of a path built from a variable or substitution (it could expand to / or ~); write the path out',
    test: (input) =>
      input.cmd.program === 'rm' && isRecursive(input.cmd)
        ? firstAt(input, operands(input.cmd.args), ['unknown'])
        : false,
  },
  {
    id: 'find-delete',
    why: 'find -delete (or -exec rm) over the whole workspace or outside it',
    test: (input) => {
      const { cmd } = input;
      if (
        cmd.program !== 'find' ||
        !cmd.args.some(
          (a) =>
            a.text === '-delete' ||
            ((a.text === '-exec' || a.text === '-execdir') &&
              /(^|\/)(rm|shred)$/.test(cmd.args[cmd.args.indexOf(a) + 1]?.text ?? '')),
        )
      )
        return false;
      const starts = cmd.args
        .slice(
          0,
          Math.max(
            0,
            cmd.args.findIndex((a) => /^[-(!]/.test(a.text)),
          ),
        )
        .filter((a) => !a.text.startsWith('-'));
      if (starts.length === 0) return cmd.cwd === input.scope.root ? '.' : false;
      return firstAt(input, starts, ['root', 'git', 'home', 'outside', 'scratch', 'unknown']);
    },
  },
  {
    id: 'git-push',
    why: 'publishes to a remote; nothing leaves the machine before gaffer has checked the work',
    test: ({ cmd }) => (gitCall(cmd)?.sub === 'push' ? 'git push' : false),
  },
  {
    id: 'git-reset-hard',
    why: "git reset --hard discards uncommitted changes (other workers' too, in a shared workspace)",
    test: ({ cmd }) => {
      const git = gitCall(cmd);
      return git?.sub === 'reset' && git.args.some((a) => ['--hard', '--merge', '--keep'].includes(a.text))
        ? 'git reset --hard'
        : false;
    },
  },
  {
    id: 'git-clean',
    why: 'git clean -f deletes untracked files, new work of every worker included',
    test: ({ cmd }) => {
      const git = gitCall(cmd);
      if (git?.sub !== 'clean') return false;
      const short = shortFlags(git.args);
      const isDryRun = short.has('n') || longFlags(git.args).has('--dry-run');
      return !isDryRun && (short.has('f') || longFlags(git.args).has('--force')) ? 'git clean -f' : false;
    },
  },
  {
    id: 'git-discard',
    why: "discards or hides working-tree changes (git checkout -- / git restore / git stash), other workers' included",
    test: ({ cmd }) => {
      const git = gitCall(cmd);
      if (git === null) return false;
      if (
        git.sub === 'checkout' &&
        git.args.some((a) => a.text === '--' || a.text === '.' || a.text === '-f' || a.text === '--force')
      )
        return 'git checkout';
      if (
        git.sub === 'restore' &&
        !(
          git.args.some((a) => a.text === '--staged' || a.text === '-S') &&
          !git.args.some((a) => a.text === '--worktree' || a.text === '-W')
        )
      )
        return 'git restore';
      const stash = git.args.find((a) => !a.text.startsWith('-'))?.text ?? 'push';
      if (git.sub === 'stash' && ['push', 'save', 'drop', 'clear'].includes(stash)) return `git stash ${stash}`;
      return false;
    },
  },
  {
    id: 'git-config-global',
    why: 'changes git configuration outside the workspace (--global/--system)',
    test: ({ cmd }) => {
      const git = gitCall(cmd);
      const isRead = git?.args.some((a) => /^(--get.*|-l|--list)$/.test(a.text)) === true;
      return git?.sub === 'config' && !isRead && git.args.some((a) => a.text === '--global' || a.text === '--system')
        ? 'git config --global'
        : false;
    },
  },
  {
    id: 'pipe-to-shell',
    why: 'runs a script straight from the network (curl | sh); download it, read it, then run it',
    test: ({ cmd }) => {
      if (cmd.pipeIndex === 0 || !INTERPRETERS.has(cmd.program)) return false;
      const downloader = cmd.pipeline.slice(0, cmd.pipeIndex).find((p) => DOWNLOADERS.has(p));
      return downloader === undefined ? false : `${downloader} | ${cmd.program}`;
    },
  },
  {
    id: 'write-home',
    why: "writes to your home directory (~); only the workspace (and /tmp) are the worker's to write",
    test: (input) => firstAt(input, writeTargets(input.cmd), ['home']),
  },
  {
    id: 'write-outside',
    why: "writes outside the workspace; only the workspace (and /tmp) are the worker's to write",
    test: (input) => firstAt(input, writeTargets(input.cmd), ['outside']),
  },
  {
    id: 'write-git',
    why: 'changes files inside .git by hand; use git commands',
    test: (input) => (input.cmd.program === 'git' ? false : firstAt(input, writeTargets(input.cmd), ['git'])),
  },
  {
    id: 'mount',
    why: 'mounts or unmounts filesystems',
    test: ({ cmd }) => (['mount', 'umount', 'swapon', 'swapoff'].includes(cmd.program) ? cmd.program : false),
  },
  {
    id: 'power',
    why: 'stops or restarts the machine',
    test: ({ cmd }) => {
      if (POWER.has(cmd.program)) return cmd.program;
      if (cmd.program === 'init' && ['0', '6'].includes(cmd.args[0]?.text ?? ''))
        return `init ${cmd.args[0]?.text ?? ''}`;
      const verb = cmd.args.find((a) => !a.text.startsWith('-'))?.text ?? '';
      return cmd.program === 'systemctl' &&
        ['poweroff', 'reboot', 'halt', 'suspend', 'hibernate', 'kexec', 'rescue', 'emergency'].includes(verb)
        ? `systemctl ${verb}`
        : false;
    },
  },
  {
    id: 'kill-everything',
    why: 'signals every process you own (gaffer and other workers included); kill the pid you started',
    // `kill -9 -1`, `kill -- -1`: pid -1 (the last word after a signal or `--`); `kill -1 123` is SIGHUP to 123
    test: ({ cmd }) =>
      cmd.program === 'kill' && cmd.args.length >= 2 && cmd.args.at(-1)?.text === '-1' ? 'kill -1' : false,
  },
  {
    id: 'kill-by-name',
    why: 'kills processes by name (gaffer and other workers may match); kill the pid you started',
    test: ({ cmd }) => (['killall', 'pkill', 'killall5'].includes(cmd.program) ? cmd.program : false),
  },
  {
    id: 'publish',
    why: 'publishes a package or image; nothing leaves the machine before gaffer has checked the work',
    test: ({ cmd }) => {
      const verb = operands(cmd.args)[0]?.text ?? '';
      const isPublish =
        (['npm', 'pnpm', 'yarn', 'bun', 'cargo', 'poetry'].includes(cmd.program) && verb === 'publish') ||
        (cmd.program === 'twine' && verb === 'upload') ||
        (['gem', 'docker', 'podman'].includes(cmd.program) && verb === 'push');
      return isPublish ? `${cmd.program} ${verb}` : false;
    },
  },
  {
    id: 'global-install',
    why: 'installs outside the workspace (globally or per user); install into the project instead',
    test: ({ cmd }) => {
      const verb = operands(cmd.args)[0]?.text ?? '';
      const isGlobal = cmd.args.some((a) => a.text === '-g' || a.text === '--global' || a.text === '--user');
      if (['npm', 'pnpm', 'bun'].includes(cmd.program) && ['install', 'i', 'add', 'link'].includes(verb) && isGlobal)
        return `${cmd.program} ${verb} -g`;
      if (cmd.program === 'yarn' && verb === 'global') return 'yarn global';
      if (/^pip3?$/.test(cmd.program) && verb === 'install' && isGlobal) return 'pip install --user';
      return false;
    },
  },
  {
    id: 'crontab',
    why: 'installs or removes scheduled jobs outside the workspace',
    test: ({ cmd }) => (cmd.program === 'crontab' && !cmd.args.some((a) => a.text === '-l') ? 'crontab' : false),
  },
];

/** Rules on the raw line. */
export const LINE_RULES: readonly LineRule[] = [
  {
    id: 'fork-bomb',
    why: 'a fork bomb: it starts processes until the machine stops',
    pattern: /([A-Za-z_:][\w:]*)\s*\(\s*\)\s*\{[^}]*?\1\s*\|\s*\1\s*&/,
  },
  {
    id: 'shell-from-network',
    why: 'runs a script straight from the network (sh <(curl …), eval "$(curl …)"); download it, read it, then run it',
    pattern: /(^|[\s;&|(])(sh|bash|dash|zsh|ksh|eval|source|\.)\s+(-c\s+)?["']?(<\(|\$\(|`)\s*(curl|wget)\b/,
  },
];

/** How deep `sh -c`, `eval` and `$(…)` are read; anything nested deeper is refused, never allowed unread. */
export const MAX_DEPTH = 4;

/** Refusals for what the guard cannot read: it fails closed (spec 04), never open. */
export const UNREADABLE_RULES = {
  tooDeep: {
    id: 'nesting-too-deep',
    why: `nests commands more than ${MAX_DEPTH} levels deep (sh -c, eval, $(…)), deeper than the guard reads; run the inner command directly`,
  },
  builtProgram: {
    id: 'program-built-at-run-time',
    why: 'runs a program or script built at run time ($VAR, $(…)) that the guard cannot read; write the command out',
  },
  pipedScript: {
    id: 'script-piped-to-shell',
    why: 'feeds a script to a shell through a pipe or here-string the guard cannot read; write the commands out, or save them to a file and run it',
  },
} as const;

/** Builds the guard scope for a workspace and a worker environment. */
export function guardScope(workspace: string, env: NodeJS.ProcessEnv): GuardScope {
  const home = resolve(env.HOME ?? homedir());
  const scratch = ['/tmp', '/var/tmp', tmpdir(), ...(env.TMPDIR !== undefined ? [resolve(env.TMPDIR)] : [])];
  return { root: realWorkspace(workspace), home, scratch };
}

/**
 * Judges one `run_command` line against the rule table. Commands inside `$(…)`, backticks,
 * `sh -c '…'`, `eval …`, `find -exec sh -c '…'`, here-documents and here-strings fed to a shell,
 * and `echo '…' | sh` are judged too; `cd` is followed within the line. What it cannot read
 * (deeper than {@link MAX_DEPTH}, built at run time, piped in from elsewhere) is refused
 * (UNREADABLE_RULES). The first broken rule is the answer.
 */
export function checkCommand(
  line: string,
  scope: GuardScope,
  env: NodeJS.ProcessEnv = {},
  depth = 0,
  startCwd: string | null = scope.root,
): GuardVerdict {
  for (const rule of LINE_RULES) {
    if (rule.pattern.test(line)) return { ok: false, rule: rule.id, why: rule.why };
  }
  const parsed = parseCommandLine(line);
  const programs = new Map<number, string[]>();
  const unwrapped = parsed.commands.map((c) => ({ c, ...unwrap(c) }));
  for (const u of unwrapped) programs.set(u.c.pipeline, [...(programs.get(u.c.pipeline) ?? []), u.program]);
  let cwd = startCwd;
  for (const { c, program, args, wrappers } of unwrapped) {
    const cmd: GuardCommand = {
      program,
      args,
      wrappers,
      redirects: c.redirects,
      pipeline: programs.get(c.pipeline) ?? [],
      pipeIndex: c.pipeIndex,
      cwd,
    };
    const input: RuleInput = { cmd, scope, at: (word) => locate(word, cwd, scope, env) };
    for (const rule of COMMAND_RULES) {
      const found = rule.test(input);
      if (found !== false) return { ok: false, rule: rule.id, why: `${rule.why} (${found})` };
    }
    const programWord = c.argv[c.argv.length - 1 - args.length];
    if (program !== '' && programWord?.hasExpansion === true)
      return refuse(UNREADABLE_RULES.builtProgram, programWord.text);
    for (const inner of innerScripts(program, args, c, unwrapped)) {
      if (inner.unreadable !== null) return refuse(inner.unreadable, inner.text);
      if (depth >= MAX_DEPTH) return refuse(UNREADABLE_RULES.tooDeep, inner.text);
      const verdict = checkCommand(inner.text, scope, env, depth + 1, cwd);
      if (!verdict.ok) return verdict;
    }
    if (program === 'cd') {
      const target = operands(args)[0];
      if (target === undefined) cwd = scope.home;
      else if (target.text !== '-') {
        const where = locate(target, cwd, scope, env);
        cwd = where.place === 'unknown' ? null : where.abs;
      }
    }
  }
  for (const sub of parsed.substitutions) {
    if (depth >= MAX_DEPTH) return refuse(UNREADABLE_RULES.tooDeep, sub);
    const verdict = checkCommand(sub, scope, env, depth + 1, cwd);
    if (!verdict.ok) return verdict;
  }
  return { ok: true };
}

type Unreadable = (typeof UNREADABLE_RULES)[keyof typeof UNREADABLE_RULES];

function refuse(rule: Unreadable, found: string): GuardVerdict {
  const shown = found.length > 80 ? `${found.slice(0, 77)}...` : found;
  return { ok: false, rule: rule.id, why: `${rule.why} (${shown})` };
}

/** A script a command runs as shell code, or why it cannot be read. */
interface InnerScript {
  text: string;
  unreadable: Unreadable | null;
}

const FIND_EXEC = new Set(['-exec', '-execdir', '-ok', '-okdir']);

/**
 * The scripts a command runs as shell code, each to be judged as a command line of its own:
 * `sh -c '…'`, `eval …`, `find … -exec sh -c '…' \;`, `echo '…' | sh`, `sh <<< '…'`. A script
 * built from an expansion, or fed from a pipe the guard cannot read, comes back unreadable.
 */
function innerScripts(
  program: string,
  args: ShellWord[],
  command: SimpleCommand,
  line: readonly { c: SimpleCommand; program: string; args: ShellWord[] }[],
): InnerScript[] {
  if (program === 'eval')
    return args.length === 0
      ? []
      : [
          readable(
            args.map((a) => a.text).join(' '),
            args.some((a) => a.hasExpansion),
          ),
        ];
  if (program === 'find') {
    const scripts: InnerScript[] = [];
    args.forEach((a, i) => {
      if (!FIND_EXEC.has(a.text)) return;
      const end = args.findIndex((w, j) => j > i && (w.text === ';' || w.text === '+'));
      const words = args.slice(i + 1, end === -1 ? args.length : end);
      const first = words[0];
      if (first !== undefined) scripts.push(...innerScripts(baseName(first.text), words.slice(1), command, line));
    });
    return scripts;
  }
  if (!SHELLS.has(baseName(program))) return [];
  const at = args.findIndex((a) => /^-[a-z]*c[a-z]*$/.test(a.text));
  if (at !== -1) {
    const script = args[at + 1];
    return script === undefined ? [] : [readable(script.text, script.hasExpansion)];
  }
  const hereString = command.redirects.find((r) => r.op === '<<<');
  if (hereString !== undefined) return [readable(hereString.target.text, hereString.target.hasExpansion)];
  // a shell with no script file reads its script from stdin: from the pipe before it
  const readsStdin =
    (operands(args).length === 0 || args.some((a) => a.text === '-s')) &&
    !command.redirects.some((r) => r.op === '<' || r.op === '<<' || r.op === '<<-');
  if (command.pipeIndex === 0 || !readsStdin) return [];
  const producer = line.find((u) => u.c.pipeline === command.pipeline && u.c.pipeIndex === command.pipeIndex - 1);
  if (producer?.program === 'echo' && producer.c.redirects.length === 0) {
    const words = producer.args.filter((a, i) => !(i === 0 && /^-[neE]+$/.test(a.text)));
    return [
      readable(
        words.map((a) => a.text).join(' '),
        words.some((a) => a.hasExpansion),
      ),
    ];
  }
  return [{ text: `${producer?.program ?? '…'} | ${program}`, unreadable: UNREADABLE_RULES.pipedScript }];
}

function readable(text: string, hasExpansion: boolean): InnerScript {
  return { text, unreadable: hasExpansion ? UNREADABLE_RULES.builtProgram : null };
}
