#!/usr/bin/env bash
# fuzz/regress.sh — the fuzz regression run of the test command (test.sh): every harness replays
# its committed corpus (fuzz/corpus/HARNESS/) and every crash ever filed against etproof
# (fuzz/crashes/HARNESS/), then mutates for a fixed number of executions with a fixed seed, so a
# run is repeatable. Exit 1 when any harness crashes; the input is kept under
# build-fuzz/regress-artifacts/HARNESS/ (minimise it with fuzz/run.sh's steps, or by hand:
# build-fuzz/fuzz/fuzz_HARNESS -minimize_crash=1 -runs=20000 FILE).
#
#   fuzz/regress.sh [HARNESS...]      default: all seven
#
# fuzz/crashes-upstream/ (crashes inside ExecuTorch) is never replayed here. The bundle harness
# only replays (no mutation): a mutated program reaches crashes inside ExecuTorch within a few
# thousand executions, and which one a given seed reaches changes with any change to etproof's
# code, so mutating it here would fail the tests on upstream bugs; fuzz/run.sh bundle mutates it.
# Execution counts (ETPROOF_FUZZ_RUNS_SCALE multiplies them) are sized so all six take about a
# minute on one core of the CI machine (docs/reliability.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${ETPROOF_FUZZ_BUILD:-$ROOT/build-fuzz}"
SCALE="${ETPROOF_FUZZ_RUNS_SCALE:-1}"
declare -A RUNS=([manifest]=60000 [npy]=150000 [xfail]=60000 [ledger]=30000 [bundle]=0 [image]=20000 [bpte]=60000)
export OPENVINO_LIB_PATH="${OPENVINO_LIB_PATH:-/nonexistent}"  # ASan refuses RTLD_DEEPBIND (README)
export ETPROOF_TEST_BUNDLES="${ETPROOF_TEST_BUNDLES:-$ROOT/build/test-bundles}"
harnesses=("$@")
((${#harnesses[@]})) || harnesses=(manifest npy xfail ledger bundle image bpte)
rc=0
for h in "${harnesses[@]}"; do
  bin="$BUILD/fuzz/fuzz_$h"
  [[ -x "$bin" ]] || { echo "fuzz $h: FAILED: no $bin (./setup.sh --no-run --fuzz builds it)"; rc=1; continue; }
  runs=$(( RUNS[$h] * SCALE ))
  art="$BUILD/regress-artifacts/$h"
  rm -rf "$art"; mkdir -p "$art"
  work="$(mktemp -d)"
  log="$art/log.txt"
  dict=(); [[ -f "$ROOT/fuzz/dict/$h.dict" ]] && dict=(-dict="$ROOT/fuzz/dict/$h.dict")
  inputs=("$ROOT/fuzz/corpus/$h")
  [[ -d "$ROOT/fuzz/crashes/$h" ]] && inputs+=("$ROOT/fuzz/crashes/$h")
  t0=$(date +%s)
  if ((runs > 0)); then
    cmd=("$bin" -runs="$runs" -seed=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$art/"
         "${dict[@]}" "$work" "${inputs[@]}")
  else  # replay only: every file once
    mapfile -t files < <(find "${inputs[@]}" -type f ! -name '*.txt' ! -name 'README*' | sort)
    cmd=("$bin" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$art/" "${files[@]}")
  fi
  if "${cmd[@]}" >"$log" 2>&1; then
    n="$(ls "${inputs[@]}" | grep -vcE '\.txt$|^$|:$' || true)"
    echo "fuzz $h: ok, $( ((runs > 0)) && echo "$runs executions" || echo "replayed only") over $n committed inputs ($(( $(date +%s) - t0 ))s)"
  else
    echo "fuzz $h: FAILED (log: $log); the input: $(ls "$art" | grep -E '^(crash|oom|timeout|leak)-' | head -1)"
    grep -E 'ERROR: |SUMMARY: |runtime error|^ *#[0-9] ' "$log" | head -20 | sed 's/^/    /'
    rc=1
  fi
  rm -rf "$work"
done
exit "$rc"
