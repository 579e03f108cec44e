#!/usr/bin/env bash
# Installs what the fixture projects under test/fixtures/projects need (the parser corpus runs them for real).
# Idempotent and quick when everything is already there. A toolchain that cannot be installed is reported,
# not fatal: test/verification/corpus.test.ts skips that framework and says why.
set -euo pipefail
cd "$(dirname "$0")/../test/fixtures/projects"

# node fixtures: reinstall only when the lockfile changed since the last install. bun and deno are the
# registry packages that ship the binary (an optional dependency per platform)
for dir in node-test vitest jest mocha tape tap ava jasmine bun deno nyc; do
  [ -f "$dir/package.json" ] || continue
  if ! grep -q '"dependencies"\|"devDependencies"' "$dir/package.json"; then continue; fi
  stamp="$dir/node_modules/.package-lock.json"
  if [ -d "$dir/node_modules" ] && [ -f "$stamp" ] && [ "$dir/package-lock.json" -ot "$stamp" ]; then continue; fi
  echo "setup-fixtures: npm ci in $dir"
  if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error); then
    rm -rf "$dir/node_modules"
    echo "setup-fixtures: could not install $dir; its corpus tests will be skipped" >&2
  fi
done
for bin in bun deno; do
  if [ -d "$bin/node_modules" ] && ! "$bin/node_modules/.bin/$bin" --version >/dev/null 2>&1; then
    rm -rf "$bin/node_modules"
    echo "setup-fixtures: the $bin binary from the registry package does not run here; its corpus tests will be skipped" >&2
  fi
done

# go: nothing system-wide is installed from here (.ci/run installs Debian's golang-go)
command -v go >/dev/null 2>&1 || echo "setup-fixtures: go is not installed (apt-get install golang-go); its corpus tests will be skipped" >&2

# pytest: the machine's python when it has pytest, else a venv in the fixture over the system's pytest
# (.ci/run installs Debian's python3-pytest and python3-venv; nothing system-wide is installed from here)
if ! python3 -c 'import pytest' >/dev/null 2>&1 && [ ! -x pytest/.venv/bin/python ]; then
  if /usr/bin/python3 -c 'import pytest, venv' >/dev/null 2>&1; then
    /usr/bin/python3 -m venv --system-site-packages pytest/.venv
  else
    echo "setup-fixtures: pytest is not installed (apt-get install python3-pytest python3-venv); its corpus tests will be skipped" >&2
  fi
fi

# unittest: the standard library of the machine's python3
command -v python3 >/dev/null 2>&1 || echo "setup-fixtures: python3 is not installed; the unittest corpus tests will be skipped" >&2

# cargo: the fixture has no dependencies, so nothing to fetch; say so when the toolchain is missing
command -v cargo >/dev/null 2>&1 || echo "setup-fixtures: cargo is not installed; its corpus tests will be skipped" >&2
exit 0
