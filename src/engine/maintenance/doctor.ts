import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { toGafferError } from '../../domain/errors.js';
import { detectCli, findBinary } from '../../runners/cli/detect.js';
import { getCliProfile, installHint } from '../../runners/cli/profiles.js';
import { envForRunner } from '../../platform/process/billing-env.js';
import { checkEnvScrub, readStartEnv } from '../../platform/process/scrub-env.js';
import { detectLimitMechanism } from '../../platform/process/limits.js';
import { findOnPath } from '../../platform/sandbox/probe.js';
import { sandboxStatus } from '../../platform/sandbox/bwrap.js';
import { trialNetwork, trialProgramInSandbox, trialSandbox, trialUnixSockets } from '../../platform/sandbox/trial.js';
import { slirp4netnsStatus } from '../../platform/sandbox/network.js';
import { describeNetworks, networkSetupOf } from '../../config/network-config.js';
import { AGENT_CLI_KEYS, DEFAULT_ENDPOINT } from '../../config/config-schema.js';
import {
  DEFAULT_CONFIG,
  loadConfig,
  redactUrl,
  type GafferConfig,
  type LoadedConfig,
  type ModelEndpoint,
} from '../../config/config.js';
import { describeConfig, type ShownConfig } from '../../config/describe-config.js';
import { readCommittedHints, readWorkspaceHints } from '../../verification/workspace-hints.js';
import { checkEntryEndpoints, modelIds, modelsRequest } from './doctor-endpoints.js';
import { latestSchemaVersion } from '../../store/store.js';
import { describeSpine, type SpineReport } from './doctor-spine.js';

/** One doctor check (spec 07): what was found and, when it is not ok, what to do. */
export interface DoctorCheck {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  /** What to do about it; null when nothing needs doing. */
  fix: string | null;
}

/** `gaffer doctor --json`. */
export interface DoctorReport {
  config: ShownConfig & { data_dir: string };
  /** The roster and where it came from, the ladders, learning, approval, budgets and the breaker (doctor-spine.ts). */
  spine: SpineReport;
  checks: DoctorCheck[];
}

/** What doctor looks at. */
export interface DoctorOptions {
  dataDir: string;
  configPath?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Also read this workspace's `.gaffer/workspace.json`. */
  workspace?: string | undefined;
  /** Timeout of each endpoint request, ms (default 3000). */
  endpointTimeoutMs?: number;
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

/** Runs every check of `gaffer doctor`; never throws for what it finds. */
export async function runDoctor(opts: DoctorOptions): Promise<DoctorReport> {
  const env = opts.env ?? process.env;
  const checks: DoctorCheck[] = [];
  const add = (name: string, status: DoctorCheck['status'], detail: string, fix: string | null = null) =>
    checks.push({ name, status, detail, fix });

  let loaded: LoadedConfig;
  try {
    // the CLI took gaffer's secrets out of process.env at start: the config is read from the env it started with
    loaded = loadConfig({ dataDir: opts.dataDir, configPath: opts.configPath, env: opts.env ?? readStartEnv() });
    add(
      'config',
      'ok',
      loaded.file ? `read ${loaded.file}` : `no config file in ${opts.dataDir}: defaults and the environment`,
    );
  } catch (err) {
    add('config', 'fail', toGafferError(err).message, 'fix the value named, or remove it to use the default');
    loaded = { config: structuredClone(DEFAULT_CONFIG), file: opts.configPath ?? null, sources: {} };
  }
  const { config } = loaded;

  checkNode(add);
  checkGit(add, env);
  checkDataDir(opts.dataDir, add);
  checkStore(opts.dataDir, add);
  checkRunners(config, env, add);
  checkSandbox(config, env, add);
  checkNetwork(config, env, add);
  checkLimits(config, add);
  const scrub = checkEnvScrub();
  add('secrets in env', scrub.status, scrub.detail, scrub.fix);
  for (const [name, endpoint] of Object.entries(config.models)) {
    const check = await checkEndpoint(name, endpoint, opts.endpointTimeoutMs ?? 3000);
    checks.push(check);
  }
  await checkEntryEndpoints(config, opts.dataDir, opts.workspace, opts.endpointTimeoutMs ?? 3000, add);
  if (opts.workspace !== undefined) {
    const { hints, warnings } = readWorkspaceHints(opts.workspace);
    if (warnings.length > 0)
      add(
        'workspace hints',
        'warn',
        warnings.join('; '),
        `remove those keys from ${join(opts.workspace, '.gaffer', 'workspace.json')}; set them in the data dir's gaffer.config instead`,
      );
    else
      add(
        'workspace hints',
        'ok',
        Object.keys(hints).length > 0 ? `hints: ${JSON.stringify(hints)}` : 'no .gaffer/workspace.json hints',
      );
    // issue 32: a job goes by the hints as committed at HEAD, never by a working copy a worker could have written
    const { untrusted } = await readCommittedHints(opts.workspace);
    if (untrusted !== null)
      add(
        'committed hints',
        'warn',
        untrusted,
        `commit ${join(opts.workspace, '.gaffer', 'workspace.json')}: jobs go by the hints as committed at HEAD`,
      );
  }
  const spine = describeSpine(config, opts.dataDir, opts.workspace);
  if (spine.roster.error !== undefined)
    add(
      'roster',
      'fail',
      spine.roster.error,
      'fix the roster as the message says: every job is refused until it can be read',
    );
  return { config: { ...describeConfig(loaded), data_dir: opts.dataDir }, spine, checks };
}

type Add = (name: string, status: DoctorCheck['status'], detail: string, fix?: string | null) => void;

function checkNode(add: Add): void {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  if (major > 20 || (major === 20 && minor >= 19)) add('node', 'ok', `node ${process.version}`);
  else add('node', 'fail', `node ${process.version} is older than 20.19`, 'install Node.js 20.19 or newer');
}

function checkGit(add: Add, env: NodeJS.ProcessEnv): void {
  const path = findOnPath('git', env);
  const run =
    path === null
      ? null
      : spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 5000, env: envForRunner('git', 'free', env) });
  if (path === null || run === null || run.status !== 0) {
    add(
      'git',
      'warn',
      path === null
        ? 'git is not on PATH: evidence falls back to sizes and mtimes (less exact)'
        : `git --version failed: ${run?.error?.message ?? run?.stderr.trim() ?? ''}`,
      'install git (apt-get install git)',
    );
    return;
  }
  add('git', 'ok', `${run.stdout.trim()} (${path})`);
}

/**
 * Writable and with room, without making anything: a data dir that does not exist yet is judged by
 * the folder gaffer would make it in (doctor is a look, and the first start makes it 0700).
 */
function checkDataDir(dataDir: string, add: Add): void {
  const existing = nearestExisting(dataDir);
  const yet = existing === dataDir ? '' : `${dataDir} does not exist yet (gaffer makes it on its first start); `;
  try {
    if (existing === dataDir) {
      const probe = join(dataDir, `.doctor-${process.pid}`);
      writeFileSync(probe, 'ok');
      rmSync(probe, { force: true });
    } else {
      accessSync(existing, constants.W_OK | constants.X_OK);
    }
  } catch (err) {
    add(
      'data dir',
      'fail',
      `${yet}${existing} is not writable: ${(err as Error).message}`,
      'choose a writable --data-dir (or GAFFER_DATA_DIR), or fix its permissions',
    );
    return;
  }
  let free: number | null = null;
  try {
    const fs = statfsSync(existing);
    free = fs.bavail * fs.bsize;
  } catch {
    free = null;
  }
  const freeText = free === null ? 'free space unknown' : `${(free / GIB).toFixed(1)} GiB free`;
  if (free !== null && free < 100 * MIB)
    add(
      'data dir',
      'fail',
      `${yet}${existing}: only ${Math.round(free / MIB)} MiB free`,
      'free disk space (job logs and checkpoints live here) or move the data dir',
    );
  else if (free !== null && free < GIB)
    add('data dir', 'warn', `${yet}${existing}: ${freeText}`, 'free disk space: job logs and checkpoints live here');
  else add('data dir', 'ok', `${yet}${existing} is writable, ${freeText}`);
}

/** `path` itself when it exists, else its nearest ancestor that does. */
function nearestExisting(path: string): string {
  let at = path;
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  return at;
}

/**
 * Reads the store read-only: opening it as the engine does would create a missing gaffer.db and
 * migrate an old one, and doctor must leave the data dir as it found it (issue 12). No db yet is
 * fine; an old schema is said (the next start migrates it), a newer one warned about.
 */
function checkStore(dataDir: string, add: Add): void {
  const path = join(dataDir, 'gaffer.db');
  if (!existsSync(path)) {
    add('sqlite', 'ok', `no store yet: ${path} is made on gaffer's first start`);
    return;
  }
  let db: Database.Database | null = null;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: 15_000 });
    const answer = integrityOf(db.pragma('integrity_check'));
    const version = Number(db.pragma('user_version', { simple: true }));
    const latest = latestSchemaVersion();
    if (answer !== 'ok') {
      add(
        'sqlite',
        'fail',
        `${path}: integrity_check says ${answer.slice(0, 300)}`,
        'stop gaffer, move gaffer.db aside and start again (jobs in it are lost), or restore a backup',
      );
    } else if (latest !== null && version > latest) {
      add(
        'sqlite',
        'warn',
        `${path}: integrity_check ok; schema ${version}, newer than this build's ${latest}`,
        'run the gaffer that wrote it (this one may misread its rows)',
      );
    } else {
      const schema =
        latest === null
          ? `schema ${version}`
          : version < latest
            ? `schema ${version} of ${latest}: the next start migrates it`
            : `schema ${version}`;
      add('sqlite', 'ok', `${path}: integrity_check ok; ${schema}`);
    }
  } catch (err) {
    add(
      'sqlite',
      'fail',
      `cannot read the store ${path}: ${(err as Error).message}`,
      'check the data dir (above); a corrupt gaffer.db can be moved aside',
    );
  } finally {
    db?.close();
  }
}

/** `PRAGMA integrity_check`'s rows as one line: `ok`, or what it found. */
function integrityOf(rows: unknown): string {
  if (!Array.isArray(rows)) return String(rows);
  return rows
    .map((row: unknown) =>
      typeof row === 'object' && row !== null && 'integrity_check' in row ? String(row.integrity_check) : String(row),
    )
    .join('; ');
}

function checkRunners(config: GafferConfig, env: NodeJS.ProcessEnv, add: Add): void {
  try {
    accessSync('/bin/sh', constants.X_OK);
    add(
      'runner shell',
      config.runners.shell.enabled ? 'ok' : 'warn',
      `sh -c in the workspace${config.runners.shell.enabled ? '' : ' — disabled in the config'}`,
      config.runners.shell.enabled ? null : 'set runners.shell.enabled: true',
    );
  } catch {
    add('runner shell', 'fail', '/bin/sh is missing', 'install a POSIX shell at /bin/sh');
  }

  const endpoint = config.models[DEFAULT_ENDPOINT];
  const builtinFix = 'set GAFFER_MODEL_URL and GAFFER_MODEL (or models.default.url and .model in gaffer.config)';
  if (!config.runners.builtin.enabled) add('runner builtin', 'ok', 'disabled in the config');
  else if (endpoint === undefined)
    add('runner builtin', 'warn', 'no model endpoint configured: builtin workers cannot run', builtinFix);
  else if (endpoint.api === 'gemini')
    add(
      'runner builtin',
      'warn',
      `models.default speaks the gemini API: the builtin agent speaks OpenAI-compatible or Anthropic`,
      'point models.default at an OpenAI-compatible or Anthropic endpoint; a gemini endpoint is for runners.gemini.endpoint',
    );
  else if (endpoint.model === null)
    add(
      'runner builtin',
      'warn',
      `endpoint ${redactUrl(endpoint.url)} has no model`,
      'set GAFFER_MODEL (or models.default.model)',
    );
  else
    add(
      'runner builtin',
      'ok',
      `${endpoint.api} endpoint ${redactUrl(endpoint.url)}, model ${endpoint.model}, billing ${config.runners.builtin.billing}`,
    );

  for (const key of AGENT_CLI_KEYS) {
    const profile = getCliProfile(key);
    if (profile === undefined) continue;
    const settings = config.runners[key];
    const install = installHint(profile);
    const name = `runner ${key}`;
    if (!settings.enabled) {
      // a disabled CLI is a third-party binary gaffer has not been allowed to run: looked for, not executed
      const path = findBinary(profile.binary, [], env.PATH);
      add(
        name,
        'ok',
        `disabled${path === null ? ', not installed' : `, installed at ${path}`}`,
        `to use it: ${path === null ? `${install}, then ` : ''}set runners.${key}.enabled: true`,
      );
      continue;
    }
    const found = detectCli(profile, { pathEnv: env.PATH ?? '' });
    if (found.path === null) add(name, 'fail', `enabled but not installed (${profile.binary} is not on PATH)`, install);
    else if (!found.installed)
      add(
        name,
        'fail',
        `enabled but unusable: ${found.reason ?? 'its version command failed'}`,
        `reinstall it: ${install}`,
      );
    else {
      const pinned = found.version === profile.version ? '' : ` (gaffer was checked against ${profile.version})`;
      // installed is not enough: it must start inside the sandbox too (a package under /tmp once did not)
      const inside =
        config.sandbox !== 'off' && sandboxStatus().available
          ? trialProgramInSandbox(found.path, profile.versionArgs, env)
          : null;
      if (inside !== null && !inside.ok)
        add(
          name,
          'fail',
          `${profile.label} ${found.version ?? '?'} at ${found.path}, but ${inside.detail}`,
          'install it where the sandbox can see it (outside /tmp), or set sandbox: off',
        );
      else
        add(
          name,
          found.version === profile.version ? 'ok' : 'warn',
          `${profile.label} ${found.version ?? '?'} at ${found.path}${pinned}, enabled, billing ${settings.billing}${inside === null ? '' : ', runs inside the sandbox'}`,
          pinned === '' ? null : install,
        );
    }
  }
}

function checkSandbox(config: GafferConfig, env: NodeJS.ProcessEnv, add: Add): void {
  const status = sandboxStatus();
  const how =
    status.version === null
      ? 'install bubblewrap (apt-get install bubblewrap)'
      : 'enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces=15000), or run the container with them allowed (e.g. docker --security-opt seccomp=unconfined)';
  if (config.sandbox === 'off') {
    add(
      'sandbox',
      'warn',
      `off in the config: workers run unsandboxed (bubblewrap ${status.available ? 'would work here' : 'does not work here'})`,
      'set sandbox: auto',
    );
  } else if (status.available) {
    // the probe proves the sandbox holds; the trial proves honest work runs in it (spec 04: HOME writable, writes discarded)
    const trial = trialSandbox(env);
    // issue 32: a host unix socket (docker.sock, the session bus, an ssh-agent) is a way out of a network namespace
    const sockets = trial.ok ? trialUnixSockets(env) : null;
    if (!trial.ok)
      add(
        'sandbox',
        'fail',
        `${status.version ?? 'bwrap'} holds, but ${trial.detail}`,
        'check that HOME is a directory and the workspace is writable; or set sandbox: off',
      );
    else if (sockets?.ok === true)
      add(
        'sandbox',
        'ok',
        `${status.version ?? 'bwrap'}: ${status.reason}; ${trial.detail}; unix sockets: ${sockets.detail}`,
      );
    else
      add(
        'sandbox',
        'warn',
        `${status.version ?? 'bwrap'}: ${status.reason}; ${trial.detail}; but unix sockets: ${sockets?.detail ?? ''}`,
        'run gaffer on x86_64 or arm64 with a kernel that has seccomp filters (CONFIG_SECCOMP_FILTER), or keep sockets a worker must not reach out of the filesystem it sees',
      );
  } else {
    const what = `not available: ${status.reason}`;
    if (config.sandbox === 'required')
      add('sandbox', 'fail', `${what} — with sandbox: required every worker is refused`, how);
    else add('sandbox', 'warn', `${what} — workers run unsandboxed (rows say sandboxed: false)`, how);
  }
}

/**
 * Which network each kind of run gets here (issue 11): slirp4netns found or not (a trial when it
 * is), the mode of shell workers, the verification, builtin commands and agent CLIs, and the host
 * loopback ports forwarded. A run on the host network can reach gaffer's API: a warning.
 */
function checkNetwork(config: GafferConfig, env: NodeJS.ProcessEnv, add: Add): void {
  const slirp = slirp4netnsStatus();
  const sandboxWorks = sandboxStatus().available;
  const modes = Object.entries(describeNetworks(config, sandboxWorks))
    .map(([kind, mode]) => `${kind} ${mode}`)
    .join(', ');
  const { loopbackPorts = [], endpointPorts = [] } = networkSetupOf(config);
  const forwarded = [
    loopbackPorts.length > 0
      ? `host loopback ports forwarded into every run: ${loopbackPorts.join(', ')}`
      : 'no host loopback port forwarded (network.loopback_ports)',
    ...(endpointPorts.length > 0 ? [`into agent CLIs also the endpoints' ${endpointPorts.join(', ')}`] : []),
  ].join('; ');
  const found = slirp.path === null ? 'slirp4netns not found' : `${slirp.version ?? 'slirp4netns'} at ${slirp.path}`;
  if (config.sandbox === 'off' || !sandboxWorks) {
    add(
      'network',
      'warn',
      `${found}; every run has the host network (no sandbox), gaffer's API included: ${modes}`,
      config.sandbox === 'off' ? 'set sandbox: auto' : 'make the sandbox work (see the sandbox line)',
    );
    return;
  }
  if (slirp.path === null) {
    const required = config.sandbox === 'required';
    add(
      'network',
      required ? 'fail' : 'warn',
      `${found}: runs that need outbound network ${required ? 'are refused (sandbox: required)' : "get the host network, gaffer's API included"}: ${modes}; ${forwarded}`,
      'install slirp4netns (apt-get install slirp4netns)',
    );
    return;
  }
  const trial = trialNetwork(env);
  if (!trial.ok)
    add(
      'network',
      'fail',
      `${found}, but ${trial.detail}: ${modes}`,
      'check that slirp4netns can join a network namespace here (slirp4netns --version; user namespaces), or set sandbox: off',
    );
  else add('network', 'ok', `${found}; ${trial.detail}; ${modes}; ${forwarded}`);
}

/** GET the endpoint's models route (3 s): reachable, key accepted, model listed. */
/** Which mechanism holds each run's limits here (issue 11): a cgroup per run, else the watchdog. */
function checkLimits(config: GafferConfig, add: Add): void {
  const { mechanism, detail } = detectLimitMechanism();
  const { processes, memory_mb, cpu_weight } = config.limits;
  const what = `${processes} processes, ${memory_mb} MiB, CPU weight ${cpu_weight} per worker and verification, held by ${detail}`;
  if (mechanism === 'watchdog')
    add(
      'limits',
      'warn',
      what,
      'run gaffer where it can make cgroups: as root with cgroup v1, or in a delegated cgroup v2 (systemd Delegate=yes)',
    );
  else add('limits', 'ok', what);
}

async function checkEndpoint(name: string, e: ModelEndpoint, timeoutMs: number): Promise<DoctorCheck> {
  const check = `endpoint ${name}`;
  const shown = redactUrl(e.url);
  const { url, headers } = modelsRequest(e);
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    const why = cause === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : `unreachable (${cause})`;
    return {
      name: check,
      status: 'fail',
      detail: `${shown}: ${why}`,
      fix: 'start the model server, or fix the URL (GAFFER_MODEL_URL / models.<name>.url)',
    };
  }
  const body = await res.text().catch(() => '');
  if (res.status === 401 || res.status === 403) {
    return {
      name: check,
      status: 'fail',
      detail: `${shown}: the key was refused (HTTP ${res.status})${e.key ? '' : ' — no key is configured'}`,
      fix: `set the key (GAFFER_MODEL_KEY, or models.${name}.key_env naming a variable that holds it)`,
    };
  }
  if (!res.ok) {
    return {
      name: check,
      status: 'warn',
      detail: `${shown}: the models route answered HTTP ${res.status}; the endpoint may still serve completions`,
      fix: 'check the base URL includes the version path, e.g. http://127.0.0.1:11434/v1',
    };
  }
  const listed = modelIds(body);
  if (e.model !== null && listed.length > 0 && !listed.includes(e.model)) {
    return {
      name: check,
      status: 'warn',
      detail: `${shown}: reachable, but model ${e.model} is not listed (it lists ${listed.slice(0, 8).join(', ')}${listed.length > 8 ? ', …' : ''})`,
      fix: `pick a listed model (GAFFER_MODEL / models.${name}.model)`,
    };
  }
  return {
    name: check,
    status: 'ok',
    fix: null,
    detail: `${shown}: reachable (HTTP ${res.status})${listed.length > 0 ? `, ${listed.length} model(s) listed` : ''}${e.model !== null && listed.includes(e.model) ? `, ${e.model} among them` : ''}`,
  };
}
