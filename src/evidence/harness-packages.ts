import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  type Dirent,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { isInExcludedDir, relativeInside } from './paths.js';

/**
 * The packages the test command runs, recorded whole and by content at every snapshot, whatever the
 * size of the dependency folder around them: the launchers (`node_modules/.bin`, a virtualenv's
 * `bin/`), the test frameworks found there and the bins the `test` script names, then what those
 * frameworks depend on, breadth-first, while the budget lasts (docs/outside-evidence.md).
 */
export const HARNESS_LIMITS = {
  /**
   * Files recorded over all harness packages of a workspace, frameworks first; the package the cap falls in
   * is recorded in part, the ones after it are left to the stat sample of the folder.
   */
  files: 4_000,
  /** Bytes read to hash, per record (cached hashes count too, so the same tree always splits the same way); past it, files by stat. */
  bytesRead: 16 * 1024 * 1024,
  /** Files above this are recorded by stat (with ctime, which no worker can set back), not hashed. */
  hashMaxBytes: 1024 * 1024,
  /** Packages recorded (frameworks and their dependencies). */
  packages: 600,
  /** Bytes of a `package.json` or `entry_points.txt` read to follow it. */
  manifestMaxBytes: 1024 * 1024,
} as const;

/** Test frameworks (and the parts they run through) recorded whenever they are installed. */
const NODE_FRAMEWORKS = [
  'mocha',
  'tape',
  'jest',
  'jest-cli',
  'jest-circus',
  'jest-runner',
  'jest-runtime',
  'jest-jasmine2',
  'jest-snapshot',
  'expect',
  'vitest',
  'ava',
  'tap',
  'jasmine',
  'jasmine-core',
  'uvu',
  'chai',
  'node-tap',
  'tap-parser',
  'tsx',
  'ts-node',
];
/** Scopes whose every package belongs to a framework. */
const NODE_FRAMEWORK_SCOPES = ['@jest', '@vitest', '@tapjs'];
/** pytest and what it imports at start, as top-level entries of `site-packages`. */
const PYTHON_FRAMEWORK =
  /^(pytest|_pytest|pluggy|iniconfig|py\.py|pytest\.py|pytest_.+|_pytest_.+|sitecustomize\.py|usercustomize\.py|.+\.pth)$/;

/** What a record holds of the harness packages. */
export interface HarnessRecord {
  /** Workspace-relative path -> sha1 of the content, `link:<target>`, or `stat:<size>:<mtimeMs>:<ctimeMs>:<ino>` (large or past the byte budget), with `:<mode>`. */
  files: Record<string, string>;
  /** The folders (or single files) recorded, in the order taken: a change to their set is a change. */
  roots: string[];
  /** A root the file cap cut short: only the paths both records hold are compared in it. */
  cut?: string;
}

/** Where the dependency folders are: workspace-relative `node_modules`, `.venv`, `venv` (and one level down). */
export interface HarnessInput {
  workspace: string;
  /** Excluded folders found by the record (only dependency folders are looked into). */
  folders: string[];
}

const NODE_DIR = /(^|\/)node_modules$/;
const VENV_DIR = /(^|\/)\.?venv$/;

/** Records the harness packages of the workspace's dependency folders; nothing (no system call) when there is none. */
export async function recordHarnessPackages(input: HarnessInput): Promise<HarnessRecord | null> {
  const deps = input.folders.filter((f) => NODE_DIR.test(f) || VENV_DIR.test(f));
  if (deps.length === 0) return null;
  const walker = new HarnessWalker(input.workspace);
  for (const folder of deps) {
    if (VENV_DIR.test(folder)) await walker.venv(folder);
  }
  for (const folder of deps) {
    if (NODE_DIR.test(folder)) await walker.nodeModules(folder);
  }
  return walker.result();
}

class HarnessWalker {
  readonly #workspace: string;
  readonly #realWorkspace: string;
  readonly #files: Record<string, string> = {};
  readonly #roots: string[] = [];
  readonly #rootSet = new Set<string>();
  #cut: string | undefined;
  #bytes = 0;
  #count = 0;
  #sinceYield = 0;

  constructor(workspace: string) {
    this.#workspace = workspace;
    this.#realWorkspace = realOrSelf(workspace);
  }

  result(): HarnessRecord {
    return { files: this.#files, roots: this.#roots, ...(this.#cut !== undefined ? { cut: this.#cut } : {}) };
  }

  get #full(): boolean {
    return this.#cut !== undefined || this.#roots.length >= HARNESS_LIMITS.packages;
  }

  /** A virtualenv: its launchers and config, and pytest with its plugins and start-up hooks in `site-packages`. */
  async venv(folder: string): Promise<void> {
    await this.#record(`${folder}/bin`);
    await this.#record(`${folder}/pyvenv.cfg`);
    for (const lib of ['lib', 'lib64']) {
      // `lib64 -> lib` in most virtualenvs: a link is not walked (nor followed out of the workspace)
      if (lstatOrNull(`${this.#workspace}/${folder}/${lib}`)?.isDirectory() !== true) continue;
      for (const py of this.#entries(`${folder}/${lib}`)) {
        if (!py.isDirectory() || !py.name.startsWith('python')) continue;
        const site = `${folder}/${lib}/${py.name}/site-packages`;
        if (!this.#isPlain(site)) continue;
        const plugins = new Set<string>();
        for (const e of this.#entries(site)) {
          if (PYTHON_FRAMEWORK.test(e.name)) await this.#record(`${site}/${e.name}`);
          else if (e.isDirectory() && e.name.endsWith('.dist-info')) {
            const entryPoints = `${site}/${e.name}/entry_points.txt`;
            const text = this.#readSmall(entryPoints);
            if (text === null) continue;
            await this.#record(entryPoints);
            for (const mod of pytestPlugins(text)) plugins.add(mod);
          }
        }
        for (const mod of plugins) {
          await this.#record(`${site}/${mod}`);
          await this.#record(`${site}/${mod}.py`);
        }
      }
    }
  }

  /** A `node_modules`: `.bin`, the frameworks and the `test` script's bins, then their dependencies breadth-first. */
  async nodeModules(folder: string): Promise<void> {
    await this.#record(`${folder}/.bin`);
    const start: string[] = [];
    for (const name of NODE_FRAMEWORKS) start.push(`${folder}/${name}`);
    for (const scope of NODE_FRAMEWORK_SCOPES) {
      if (!this.#isPlain(`${folder}/${scope}`)) continue;
      for (const e of this.#entries(`${folder}/${scope}`)) start.push(`${folder}/${scope}/${e.name}`);
    }
    const parent = path.posix.dirname(folder);
    for (const bin of scriptBins(this.#readSmall(parent === '.' ? 'package.json' : `${parent}/package.json`))) {
      // the package of the same name (a bin swapped for another target still leaves it recorded), and the bin's own
      start.push(`${folder}/${bin}`);
      const target = this.#linkInside(`${folder}/.bin/${bin}`);
      const pkg = target === null ? null : packageOf(target, folder);
      if (pkg !== null) start.push(pkg);
    }
    const queue: string[] = [];
    const queued = new Set<string>();
    const enqueue = (rel: string | null) => {
      if (rel === null || queued.has(rel)) return;
      queued.add(rel);
      queue.push(rel);
    };
    for (const p of start) {
      if (lstatOrNull(path.join(this.#workspace, p)) !== null) enqueue(p);
    }
    for (let i = 0; i < queue.length && !this.#full; i++) {
      const at = queue[i] as string;
      // a package that is a link inside the workspace (pnpm's store): the link, then its folder — unless that
      // folder is the workspace's own code (a monorepo's package), which the checkpoint holds as evidence
      const resolved = this.#resolveInside(at);
      if (resolved !== at) await this.#record(at);
      if (resolved === null || !isInExcludedDir(`${resolved}/`) || !(await this.#record(resolved))) continue;
      const manifest = readJson(this.#readSmall(`${resolved}/package.json`));
      for (const dep of dependencyNames(manifest)) enqueue(this.#findDependency(resolved, dep, folder));
    }
  }

  /** Node's lookup: `<pkg>/node_modules/<dep>`, then each `node_modules` above it, up to `top`. */
  #findDependency(from: string, dep: string, top: string): string | null {
    const exists = (rel: string) => lstatOrNull(path.join(this.#workspace, rel)) !== null;
    if (exists(`${from}/node_modules/${dep}`)) return `${from}/node_modules/${dep}`;
    for (let dir = path.posix.dirname(from); dir === top || dir.startsWith(`${top}/`); dir = path.posix.dirname(dir)) {
      if (path.posix.basename(dir) === 'node_modules' && exists(`${dir}/${dep}`)) return `${dir}/${dep}`;
      if (dir === top) break;
    }
    return null;
  }

  /** `rel` itself, or the folder it links to when that stays inside the workspace; null for a link out of it. */
  #resolveInside(rel: string): string | null {
    const abs = path.join(this.#workspace, rel);
    const st = lstatOrNull(abs);
    if (st === null) return null;
    if (!st.isSymbolicLink()) return rel;
    try {
      const inside = relativeInside(this.#workspace, realpathSync(abs));
      return inside === null || inside === '' ? null : inside.split(path.sep).join('/');
    } catch {
      return null;
    }
  }

  /** The workspace-relative target of a link in the workspace, when it stays inside. */
  #linkInside(rel: string): string | null {
    try {
      const target = path.resolve(
        path.dirname(path.join(this.#workspace, rel)),
        readlinkSync(path.join(this.#workspace, rel)),
      );
      const inside = relativeInside(this.#workspace, target);
      return inside === null ? null : inside.split(path.sep).join('/');
    } catch {
      return null;
    }
  }

  /**
   * Records a root (a folder walked whole, links not followed; or one file); false when it is not there,
   * or lies past a link (its own folder is not where its path says: never followed out of the workspace).
   */
  async #record(rel: string): Promise<boolean> {
    if (this.#rootSet.has(rel)) return true;
    // inside a root already recorded: nothing new to walk
    const inside = this.#roots.some((r) => rel.startsWith(`${r}/`));
    if ((this.#full && !inside) || !this.#isPlain(path.posix.dirname(rel))) return false;
    const st = lstatOrNull(`${this.#workspace}/${rel}`);
    if (st === null || inside) return st !== null;
    this.#rootSet.add(rel);
    this.#roots.push(rel);
    if (!st.isDirectory()) {
      this.#file(rel, st);
      return true;
    }
    const stack = [rel];
    while (stack.length > 0) {
      const dir = stack.pop() as string;
      // unsorted: a walk is either whole, or cut (then only the paths both records hold are compared)
      for (const e of this.#entries(dir, false)) {
        const child = `${dir}/${e.name}`;
        if (e.isDirectory()) {
          if (e.name !== '.git' && e.name !== '__pycache__' && e.name !== '.cache') stack.push(child);
          continue;
        }
        if (this.#count >= HARNESS_LIMITS.files) {
          this.#cut = rel;
          return true;
        }
        const cst = lstatOrNull(`${this.#workspace}/${child}`);
        if (cst !== null) this.#file(child, cst);
        if (++this.#sinceYield >= 200) {
          this.#sinceYield = 0;
          await yieldToLoop();
        }
      }
    }
    return true;
  }

  /** Whether a workspace folder is where its path says, no link on the way (`.` is). */
  #isPlain(rel: string): boolean {
    if (rel === '.' || rel === '') return true;
    try {
      return realpathSync(`${this.#workspace}/${rel}`) === path.join(this.#realWorkspace, rel);
    } catch {
      return false;
    }
  }

  #file(rel: string, st: Stats): void {
    this.#count++;
    const abs = `${this.#workspace}/${rel}`;
    const mode = st.mode;
    if (st.isSymbolicLink()) {
      this.#files[rel] = `link:${safeReadlink(abs)}:${mode}`;
      return;
    }
    const size = st.size;
    const byStat = `stat:${size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}:${mode}`;
    if (!st.isFile() || size > HARNESS_LIMITS.hashMaxBytes || this.#bytes + size > HARNESS_LIMITS.bytesRead) {
      this.#files[rel] = byStat;
      return;
    }
    this.#bytes += size;
    this.#files[rel] = `${hashFile(abs, st) ?? byStat}:${mode}`;
  }

  #entries(rel: string, sorted = true): Dirent[] {
    try {
      const entries = readdirSync(`${this.#workspace}/${rel}`, { withFileTypes: true });
      return sorted ? entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) : entries;
    } catch {
      return [];
    }
  }

  /** A small regular file's text (a manifest): not followed, not blocking, capped; null otherwise. */
  #readSmall(rel: string): string | null {
    const content = readRegular(path.join(this.#workspace, rel), HARNESS_LIMITS.manifestMaxBytes);
    return content === null ? null : content.toString('utf8');
  }
}

// ---- hashing ------------------------------------------------------------------------------

const HASH_CACHE_MAX = 50_000;
/**
 * Content hashes by `dev:ino:size:mtime:ctime`: a write or a `utimes` moves the ctime to now, and no
 * worker can set it back, so an entry is never stale; a later record of the same tree reads nothing.
 */
const hashCache = new Map<string, string>();

function hashFile(abs: string, st: Stats): string | null {
  const key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  const cached = hashCache.get(key);
  if (cached !== undefined) return cached;
  const content = readRegular(abs, HARNESS_LIMITS.hashMaxBytes, st);
  if (content === null) return null;
  const hash = createHash('sha1').update(content).digest('hex');
  if (hashCache.size >= HASH_CACHE_MAX) hashCache.delete(hashCache.keys().next().value as string);
  hashCache.set(key, hash);
  return hash;
}

/**
 * A regular file's content up to `max` bytes: opened without following a link, without blocking (a
 * FIFO opens at once and is refused), and only when it is still what `expected` said (else null).
 */
function readRegular(abs: string, max: number, expected?: Stats): Buffer | null {
  let fd: number;
  try {
    fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > max) return null;
    if (
      expected !== undefined &&
      (st.ino !== expected.ino ||
        st.size !== expected.size ||
        st.mtimeMs !== expected.mtimeMs ||
        st.ctimeMs !== expected.ctimeMs)
    )
      return null;
    const buf = Buffer.allocUnsafe(st.size);
    let at = 0;
    while (at < buf.length) {
      const n = readSync(fd, buf, at, buf.length - at, at);
      if (n === 0) break;
      at += n;
    }
    return at === buf.length ? buf : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

function realOrSelf(abs: string): string {
  try {
    return realpathSync(abs);
  } catch {
    return abs;
  }
}

function lstatOrNull(abs: string): Stats | null {
  try {
    return lstatSync(abs, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

function safeReadlink(abs: string): string {
  try {
    return readlinkSync(abs);
  } catch {
    return '';
  }
}

// ---- manifests ----------------------------------------------------------------------------

function readJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The names a package depends on at run time (`dependencies`, `optionalDependencies`, `peerDependencies`). */
function dependencyNames(manifest: unknown): string[] {
  if (typeof manifest !== 'object' || manifest === null) return [];
  const names = new Set<string>();
  for (const key of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
    const deps = (manifest as Record<string, unknown>)[key];
    if (typeof deps !== 'object' || deps === null) continue;
    for (const name of Object.keys(deps))
      if (/^(@[\w.-]+\/)?[\w.-]+$/.test(name) && !name.startsWith('.')) names.add(name);
  }
  return [...names];
}

/** The words of the `test`, `pretest` and `posttest` scripts that can be bins (`mocha`, `tape`, `c8`). */
function scriptBins(text: string | null): string[] {
  const manifest = readJson(text);
  const scripts =
    typeof manifest === 'object' && manifest !== null ? (manifest as { scripts?: unknown }).scripts : undefined;
  if (typeof scripts !== 'object' || scripts === null) return [];
  const words = new Set<string>();
  for (const key of ['pretest', 'test', 'posttest']) {
    const script = (scripts as Record<string, unknown>)[key];
    if (typeof script !== 'string') continue;
    for (const word of script.split(/[\s;&|()'"`]+/))
      if (/^[\w@][\w.@/-]*$/.test(word) && !word.includes('/')) words.add(word);
  }
  return [...words].slice(0, 50);
}

/** The package folder a bin's target lies in (`node_modules/mocha/bin/mocha.js` → `node_modules/mocha`). */
function packageOf(target: string, folder: string): string | null {
  const rest = target.startsWith(`${folder}/`) ? target.slice(folder.length + 1).split('/') : null;
  if (rest === null || rest.length < 2) return null;
  const first = rest[0] as string;
  if (first.startsWith('@')) return rest.length >= 3 ? `${folder}/${first}/${rest[1] as string}` : null;
  return first === '.bin' ? null : `${folder}/${first}`;
}

/** The modules a distribution registers as pytest plugins (`[pytest11]` in `entry_points.txt`): their top-level names. */
function pytestPlugins(text: string): string[] {
  const found: string[] = [];
  let inSection = false;
  for (const line of text.split(/\r?\n/)) {
    const section = /^\s*\[([^\]]+)\]\s*$/.exec(line);
    if (section) {
      inSection = section[1]?.trim() === 'pytest11';
      continue;
    }
    const m = inSection ? /^[^=]+=\s*([A-Za-z_][\w]*)/.exec(line) : null;
    if (m) found.push(m[1] as string);
  }
  return found.slice(0, 50);
}
