#!/usr/bin/env bash
# What `npm test` installs before the tests run — all of it inside this checkout, nothing system-wide —
# said before it starts. Both steps are idempotent: a second run downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
cat <<MSG
npm test: before the tests run, installs (inside this checkout, nothing system-wide; skipped when already there):
  - the verification corpus's npm packages into test/fixtures/projects/*/node_modules (about 500 MB)
  - the real agent CLIs at pinned versions into test/agents/node_modules (about 1.2 GB)
  from the npm registry, through npm's cache (~/.npm). Toolchains it does not install (go, pytest,
  cargo) are reported, and their tests skip; .ci/run installs go and pytest from Debian.
MSG
bash scripts/setup-fixtures.sh
bash scripts/install-agent-clis.sh
