#!/usr/bin/env bash
# Measures what a contributor lives with: the whole suite's wall time, and whether it passes run after
# run while the machine is busy. Usage: scripts/test-under-load.sh [runs=3] [burners=2]
# Each run is `vitest run` (after one `npm run build` and the test setup) with `burners` busy loops
# pinned to nothing, started before and stopped after it; a line per run, then a summary.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
burners=${2:-2}
npm run build >/dev/null && bash scripts/test-setup.sh >/dev/null || exit 2
log_dir=$(mktemp -d "${TMPDIR:-/tmp}/gaffer-test-load-XXXXXX")
echo "test-under-load: $runs run(s) of the whole suite with $burners CPU burner(s) on $(nproc) cores; logs in $log_dir"
pids=()
stop_burners() { [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; pids=(); }
trap stop_burners EXIT
failed=0
for run in $(seq 1 "$runs"); do
  for _ in $(seq 1 "$burners"); do (while :; do :; done) & pids+=($!); done
  began=$(date +%s)
  npx vitest run >"$log_dir/run-$run.log" 2>&1
  status=$?
  took=$(( $(date +%s) - began ))
  stop_burners
  summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log_dir/run-$run.log" | grep -E '^\s*(Test Files|Tests) ' | tr -s ' ' | paste -sd ';' -)
  echo "run $run: exit $status in $((took / 60)) min $((took % 60)) s; $summary"
  [ "$status" -eq 0 ] || failed=$((failed + 1))
done
echo "test-under-load: $((runs - failed)) of $runs run(s) passed"
[ "$failed" -eq 0 ]
