#!/usr/bin/env bash
# Installs gaffer the way a user does — a packed tarball, `npm install -g` into a fresh prefix — and
# runs it from a folder outside the checkout: `gaffer --version` must print package.json's version and
# `gaffer demo` must end proved. Everything it makes is under one temp dir, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD
want=$(node -p "require('./package.json').version")
work=$(mktemp -d "${TMPDIR:-/tmp}/gaffer-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "check-install: packing gaffer $want and installing it into $work/prefix (nothing outside it)"

# prepack builds dist/, so the tarball holds what this checkout's sources build to
tarball=$(npm pack --silent --pack-destination "$work" | tail -n 1)
cd "$work"
npm install -g --prefix "$work/prefix" --no-audit --no-fund --loglevel=error "$work/$tarball"
export PATH="$work/prefix/bin:$PATH"

installed=$(command -v gaffer)
case "$installed" in
  "$work"/prefix/*) ;;
  *) echo "check-install: gaffer resolved to $installed, not the fresh prefix" >&2; exit 1 ;;
esac
got=$(gaffer --version)
if [ "$got" != "$want" ]; then
  echo "check-install: gaffer --version printed '$got', package.json says '$want'" >&2
  exit 1
fi
echo "check-install: gaffer --version → $got (from $installed, run in $work, outside $checkout)"
# the demo's temp dir goes under $work too
if ! TMPDIR="$work" gaffer demo >"$work/demo.log" 2>&1; then
  cat "$work/demo.log" >&2
  echo "check-install: gaffer demo did not end proved" >&2
  exit 1
fi
echo "check-install: gaffer demo ended proved"
