import { posix } from 'node:path';

// spec 03 "Scope": a change to configuration, lockfiles, setup files or conftest.py, or to installed
// dependencies, can affect any test; whichever framework runs, it runs everything.

const SETUP_NAMES = new Set([
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'pnpm-workspace.yaml',
  'bun.lockb',
  'bun.lock',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.nvmrc',
  '.node-version',
  '.swcrc',
  'pyproject.toml',
  'setup.py',
  'setup.cfg',
  'pytest.ini',
  'tox.ini',
  'conftest.py',
  'Pipfile',
  'Pipfile.lock',
  'poetry.lock',
  'uv.lock',
  'pdm.lock',
  '.python-version',
  'go.mod',
  'go.sum',
  'go.work',
  'go.work.sum',
  'Cargo.toml',
  'Cargo.lock',
  'Makefile',
  'makefile',
  'GNUmakefile',
]);
const SETUP_PATTERNS = [
  /^[tj]sconfig(?:\..*)?\.json$/,
  /^(?:vitest|vite|jest)\.(?:config|workspace|setup)(?:\..*)?\.[cm]?[jt]sx?$/,
  /^(?:vitest|vite|jest)\.config\.json$/,
  /^babel\.config\./,
  /^\.babelrc/,
  /^\.mocharc/,
  /^requirements.*\.txt$/,
  /^\.env(?:\..*)?$/,
  /\.lockb?$/,
  /-lock\.(?:json|ya?ml)$/,
  /^(?:setup-?tests?|test-?setup|setup|global-?setup|global-?teardown)\.[cm]?[jt]sx?$/i,
];

/** Why a changed path runs everything; null when it does not. */
export function whyEverything(path: string): string | null {
  const name = posix.basename(path);
  if (SETUP_NAMES.has(name) || SETUP_PATTERNS.some((p) => p.test(name)) || path === '.gaffer/workspace.json') {
    return 'a change to configuration, lockfiles, setup files or conftest.py runs everything';
  }
  if (/(?:^|\/)(?:node_modules|\.venv|venv|site-packages|vendor)\//.test(path))
    return 'a change to installed dependencies runs everything';
  return null;
}
