#!/usr/bin/env bash
# Installs the real agent CLIs at spec 04's pinned versions into test/agents/ (test-only; not gaffer's
# dependencies), from test/agents/package-lock.json. Idempotent: does nothing when every pinned binary
# already answers --version; npm's cache (~/.npm) makes a reinstall cheap. Works from nothing.
set -euo pipefail
cd "$(dirname "$0")/../test/agents"

declare -A pins=(
  [claude]=2.1.197
  [codex]=0.171.0
  [gemini]=0.61.0
  [qwen]=0.15.10
  [opencode]=1.18.33
)

installed() {
  local bin
  for bin in "${!pins[@]}"; do
    [ -x "node_modules/.bin/$bin" ] || return 1
    timeout 60 "node_modules/.bin/$bin" --version 2>/dev/null | grep -qF "${pins[$bin]}" || return 1
  done
}

if installed; then
  echo "agent CLIs: already installed (test/agents/node_modules)"
  exit 0
fi
# `npm install` follows the committed lockfile; not `npm ci`, which refuses this lockfile because the CLIs'
# optional platform packages for other systems are not in it. Install scripts: only claude's and opencode's
# (they link the native binary), per "allowScripts" in test/agents/package.json.
npm install --no-audit --no-fund
if ! installed; then
  echo "agent CLIs: installed, but some binary does not report its pinned version:" >&2
  for bin in "${!pins[@]}"; do echo "  $bin: $(timeout 60 "node_modules/.bin/$bin" --version 2>&1 | head -1)" >&2; done
  exit 1
fi
echo "agent CLIs: installed into test/agents/node_modules"
