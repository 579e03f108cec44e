import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readBounded, MANIFEST_MAX_BYTES } from '../platform/files/bounded-read.js';
import { readTestScript, testsOnlyCommand } from './npm-script.js';
import type { TestFramework } from './parsers/types.js';
import type { WorkspaceHints } from './workspace-hints.js';

/** What `verify: "auto"` decided to run (spec 03 detection table). */
export interface DetectedCommand {
  command: string;
  /** `configured`, `node`, `pytest`, `go`, `cargo`, `make`. */
  kind: string;
  /** A configured override is mode `configured`, the table is `auto`. */
  mode: 'auto' | 'configured';
  /** The test runner behind the command (issue 33): the one the package's test script runs (`npm test` → tape). */
  framework?: TestFramework;
  /**
   * Steps of the test script that `command` leaves out, in words (`lint: eslint .`, `audit: aud --production`):
   * auto mode runs the script's test runner without its lint, type-check and audit steps (issue 33).
   */
  skipped?: string[];
}

/** npm's `npm init` placeholder: a test script that only fails. */
const NPM_PLACEHOLDER = /no test specified/i;

/**
 * Detects the project's test command; null when nothing is detected (then `ok: null`, never "passed").
 * `hints` are the job's (as committed at HEAD: readCommittedHints). A manifest a worker turned into
 * a FIFO, a device, a link out of the workspace or a giant is not read (issue 32): each is named in
 * `refused` (`package.json: a FIFO, not a regular file: not read`) and detection goes on without it.
 */
export function detectTestCommand(
  workspace: string,
  hints: WorkspaceHints,
  refused: string[] = [],
): DetectedCommand | null {
  const readText = (name: string): string | null => {
    const read = readBounded(join(workspace, name), { maxBytes: MANIFEST_MAX_BYTES, within: workspace });
    if (!read.ok && !read.missing) refused.push(`${name}: ${read.why}`);
    return read.ok ? read.bytes.toString('utf8') : null;
  };
  return (
    detectConfigured(hints) ??
    detectNode(workspace, readText) ??
    detectPytest(workspace, readText) ??
    (existsSync(join(workspace, 'go.mod')) ? { command: 'go test -count=1 ./...', kind: 'go', mode: 'auto' } : null) ??
    (existsSync(join(workspace, 'Cargo.toml')) ? { command: 'cargo test', kind: 'cargo', mode: 'auto' } : null) ??
    detectMake(readText)
  );
}

type ReadText = (name: string) => string | null;

// spec 07: `.gaffer/workspace.json` may carry the harmless hint `verify.command` (nothing that grants power)
function detectConfigured(hints: WorkspaceHints): DetectedCommand | null {
  const command = hints.verify?.command;
  return command ? { command, kind: 'configured', mode: 'configured' } : null;
}

function detectNode(workspace: string, readText: ReadText): DetectedCommand | null {
  const text = readText('package.json');
  if (text === null) return null;
  let test: unknown;
  try {
    test = (JSON.parse(text) as { scripts?: { test?: unknown } } | null)?.scripts?.test;
  } catch {
    return null;
  }
  if (typeof test !== 'string' || !test.trim() || NPM_PLACEHOLDER.test(test)) return null;
  const has = (f: string) => existsSync(join(workspace, f));
  const manager = has('pnpm-lock.yaml')
    ? 'pnpm'
    : has('yarn.lock')
      ? 'yarn'
      : has('bun.lockb') || has('bun.lock')
        ? 'bun'
        : 'npm';
  const script = readTestScript(text);
  const framework = script?.framework ? { framework: script.framework } : {};
  // issue 33: a script that also lints, type-checks or audits runs its test runner alone, with the project's
  // node_modules/.bin on PATH as the script would have it (not where bun or Yarn Plug'n'Play keep no such folder)
  if (script?.testsOnly && manager !== 'bun' && !has('.pnp.cjs')) {
    return {
      command: testsOnlyCommand(script.testsOnly),
      kind: 'node',
      mode: 'auto',
      ...framework,
      skipped: script.leftOut,
    };
  }
  // `bun test` is bun's own test runner, not the project's script
  return { command: manager === 'bun' ? 'bun run test' : `${manager} test`, kind: 'node', mode: 'auto', ...framework };
}

function detectPytest(workspace: string, readText: ReadText): DetectedCommand | null {
  const mentionsPytest = ['pyproject.toml', 'pytest.ini', 'setup.cfg', 'tox.ini'].some((f) => {
    const text = readText(f);
    return text !== null && (f === 'pytest.ini' || /pytest/.test(text));
  });
  const signs =
    mentionsPytest ||
    existsSync(join(workspace, 'conftest.py')) ||
    hasTestsDirTests(workspace) ||
    hasPackageTests(workspace);
  if (!signs) return null;
  const venvPython = join(workspace, '.venv', 'bin', 'python');
  const python = existsSync(venvPython) ? '.venv/bin/python' : 'python3';
  return { command: `${python} -m pytest -q -rA`, kind: 'pytest', mode: 'auto' };
}

function hasTestsDirTests(dir: string): boolean {
  try {
    return readdirSync(join(dir, 'tests')).some((f) => /^test_.*\.py$/.test(f));
  } catch {
    return false;
  }
}

// folders that hold no package of the project's own: never looked into
const NOT_PACKAGES = new Set([
  'node_modules',
  'venv',
  'env',
  '__pycache__',
  'dist',
  'build',
  'site-packages',
  'target',
  'docs',
]);
const PACKAGES_LOOKED_AT = 200;

/** `<pkg>/tests/test_*.py` one level down (tests shipped inside the package, no pytest config): no deeper walk. */
function hasPackageTests(workspace: string): boolean {
  let dirs: string[];
  try {
    dirs = readdirSync(workspace, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !NOT_PACKAGES.has(e.name))
      .map((e) => e.name)
      .slice(0, PACKAGES_LOOKED_AT);
  } catch {
    return false;
  }
  return dirs.some((dir) => hasTestsDirTests(join(workspace, dir)));
}

function detectMake(readText: ReadText): DetectedCommand | null {
  const text = readText('Makefile');
  return text !== null && /^test\s*:/m.test(text) ? { command: 'make test', kind: 'make', mode: 'auto' } : null;
}
