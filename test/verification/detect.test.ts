import { describe, expect, it } from 'vitest';
import { detectTestCommand } from '../../src/verification/detect.js';
import { makeWorkspace } from '../helpers/temp.js';

const pkg = (test: string) => JSON.stringify({ name: 'x', scripts: { test } });

describe('verify auto-detection (spec 03 table, first hit wins)', () => {
  it.each([
    [{ 'package.json': pkg('vitest run') }, 'npm test', 'node'],
    [{ 'package.json': pkg('vitest run'), 'pnpm-lock.yaml': '' }, 'pnpm test', 'node'],
    [{ 'package.json': pkg('jest'), 'yarn.lock': '' }, 'yarn test', 'node'],
    // `bun test` would run bun's own runner instead of the project's script
    [{ 'package.json': pkg('bun test'), 'bun.lockb': '' }, 'bun run test', 'node'],
    [{ 'package.json': pkg('vitest run'), 'bun.lock': '' }, 'bun run test', 'node'],
    [{ 'pytest.ini': '[pytest]\n' }, 'python3 -m pytest -q -rA', 'pytest'],
    [{ 'pyproject.toml': '[tool.pytest.ini_options]\n' }, 'python3 -m pytest -q -rA', 'pytest'],
    [{ 'conftest.py': '' }, 'python3 -m pytest -q -rA', 'pytest'],
    [{ 'tests/test_api.py': '' }, 'python3 -m pytest -q -rA', 'pytest'],
    // tests shipped inside the package, no pytest config at all
    [
      { 'mypkg/__init__.py': '', 'mypkg/tests/__init__.py': '', 'mypkg/tests/test_core.py': '' },
      'python3 -m pytest -q -rA',
      'pytest',
    ],
    [
      { 'src/calc.py': '', 'src/tests/test_calc.py': '', '.venv/bin/python': '' },
      '.venv/bin/python -m pytest -q -rA',
      'pytest',
    ],
    [{ 'conftest.py': '', '.venv/bin/python': '' }, '.venv/bin/python -m pytest -q -rA', 'pytest'],
    [{ 'go.mod': 'module x\n' }, 'go test -count=1 ./...', 'go'],
    [{ 'Cargo.toml': '[package]\n' }, 'cargo test', 'cargo'],
    [{ Makefile: 'build:\n\ttrue\ntest:\n\ttrue\n' }, 'make test', 'make'],
  ])('detects %j', (files, command, kind) => {
    expect(detectTestCommand(makeWorkspace(files), {})).toMatchObject({ command, kind, mode: 'auto' });
  });

  it("treats npm's placeholder test script as none", () => {
    expect(
      detectTestCommand(makeWorkspace({ 'package.json': pkg('echo "Error: no test specified" && exit 1') }), {}),
    ).toBeNull();
  });

  it('prefers a configured per-workspace override (the hints it is given: as committed at HEAD)', () => {
    const ws = makeWorkspace({ 'package.json': pkg('jest') });
    expect(detectTestCommand(ws, { verify: { command: 'make check' } })).toEqual({
      command: 'make check',
      kind: 'configured',
      mode: 'configured',
    });
  });

  it('detects nothing in a folder without a test runner', () => {
    expect(
      detectTestCommand(
        makeWorkspace({ 'README.md': '', 'setup.cfg': '[metadata]\n', Makefile: 'all:\n\ttrue\n' }),
        {},
      ),
    ).toBeNull();
  });

  it('looks for package tests one level down only, and not in dependency or build folders', () => {
    // <pkg>/tests without test_*.py, tests two levels down, tests of a dependency: none is the project's suite
    expect(
      detectTestCommand(makeWorkspace({ 'mypkg/tests/helpers.py': '', 'mypkg/tests/data/test_x.py': '' }), {}),
    ).toBeNull();
    expect(detectTestCommand(makeWorkspace({ 'src/mypkg/tests/test_core.py': '' }), {})).toBeNull();
    expect(
      detectTestCommand(
        makeWorkspace({ 'node_modules/dep/tests/test_dep.py': '', '.venv/lib/tests/test_x.py': '' }),
        {},
      ),
    ).toBeNull();
    expect(
      detectTestCommand(makeWorkspace({ 'build/pkg/tests/test_x.py': '', 'venv/tests/test_x.py': '' }), {}),
    ).toBeNull();
  });
});
