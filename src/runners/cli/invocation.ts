import { join } from 'node:path';
import type { CliEndpoint, CliProfile } from './profiles.js';

/** What one CLI run is made of. */
export interface InvocationInput {
  instruction: string;
  model: string | null;
  /** The session to continue; null starts a new one. */
  resume: string | null;
  endpoint: CliEndpoint | null;
  /** The CLI's own HOME (config `runners.<key>.home`), or null to use the user's. */
  home: string | null;
  /** The user's HOME, where the state lives when `home` is null. */
  userHome: string;
  /** TMPDIR for the run, inside gaffer's data dir. */
  tmpDir: string;
  /** The file holding the instruction (read on stdin by a `stdin` profile). */
  instructionFile: string;
  /** Running as root (claude needs IS_SANDBOX=1 then). */
  isRoot: boolean;
}

/** The argv (after the binary), env additions, files and writable state of one run. */
export interface Invocation {
  args: string[];
  env: Record<string, string>;
  /** Files to write before the run: absolute path → content. */
  files: Record<string, string>;
  /** The instruction goes on stdin from `instructionFile`. */
  promptOnStdin: boolean;
  /** Directories the CLI writes besides the workspace (the sandbox keeps them writable). */
  stateDirs: string[];
}

/** HOME and the XDG dirs below a CLI's own home: every one of them keeps its state there, not in the user's. */
function homeEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    XDG_CACHE_HOME: join(home, '.cache'),
  };
}

/** Fills a profile's template for one run (spec 04: the prompt is ONE argv element, never through a shell). */
export function buildInvocation(profile: CliProfile, input: InvocationInput): Invocation {
  const model = input.model ?? input.endpoint?.model ?? null;
  const endpoint = input.endpoint === null ? null : profile.endpoint(input.endpoint, model);
  const resuming = input.resume !== null && profile.canResume;
  const template = resuming && profile.resumeArgv !== undefined ? profile.resumeArgv : profile.argv;
  const fill = (parts: string[]): string[] =>
    parts.map((part) =>
      part.replace('{model}', `${endpoint?.modelPrefix ?? ''}${model ?? ''}`).replace('{session}', input.resume ?? ''),
    );
  const args: string[] = [];
  for (const part of template) {
    if (part === '{prompt}') {
      if (profile.promptVia === 'argv') args.push(input.instruction);
    } else if (part === '{model}') {
      if (model !== null) args.push(...fill(profile.modelArgs));
    } else if (part === '{resume}') {
      if (resuming) args.push(...fill(profile.resumeArgs));
    } else if (part === '{endpoint}') {
      args.push(...(endpoint?.args ?? []));
    } else {
      args.push(part);
    }
  }

  const env: Record<string, string> = {
    ...(input.home === null ? {} : homeEnv(input.home)),
    TMPDIR: input.tmpDir,
    ...profile.env,
    ...(input.isRoot ? profile.rootEnv : {}),
  };
  // its own home is all its state; in the user's home only the profile's own dirs are
  const stateDirs = input.home === null ? profile.homeStateDirs.map((rel) => join(input.userHome, rel)) : [input.home];
  if (input.home !== null) {
    for (const [name, rel] of Object.entries(profile.stateEnv ?? {})) {
      env[name] = join(input.home, rel);
      stateDirs.push(env[name]);
    }
  }
  Object.assign(env, endpoint?.env);
  const files: Record<string, string> = {};
  for (const file of input.home === null ? [] : (profile.files ?? []))
    files[join(input.home ?? '', file.name)] = file.content(input.endpoint);
  return { args, env, files, promptOnStdin: profile.promptVia === 'stdin', stateDirs };
}
