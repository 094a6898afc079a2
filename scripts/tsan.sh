#!/usr/bin/env bash
# scripts/tsan.sh — `matrix --jobs` under ThreadSanitizer (issue 11 §3; docs/reliability.md).
#
# Builds build-tsan/ (Debian's clang-19, -DETPROOF_SANITIZE=thread: etproof's own code
# instrumented, the ExecuTorch libraries from the wheel as they are) with the `etproof` CLI and its
# worker, then runs `matrix --jobs 4` over every directory of the exported test bundles, both with
# worker processes (the default) and --in-process, and fails on any ThreadSanitizer report.
# Needs ./setup.sh (the bundles) and ./setup.sh --fuzz (clang-19) first. OpenVINO-free, as the
# sanitizer build (docs/reliability.md): TSan, like ASan, refuses OpenVINO's RTLD_DEEPBIND.
#
#   scripts/tsan.sh            build, run, report; exit 0 clean, 1 a report, 2 cannot run
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-tsan"
CMAKE="$ROOT/.venv/bin/cmake"; [[ -x "$CMAKE" ]] || CMAKE=cmake
command -v clang++-19 >/dev/null || { echo "error: clang++-19 missing: run ./setup.sh --no-run --fuzz" >&2; exit 2; }
[[ -d "$ROOT/build/test-bundles" ]] || { echo "error: no exported test bundles: run ./setup.sh" >&2; exit 2; }
ET_DIR="$("$ROOT/.venv/bin/python" -c 'import executorch; print(list(executorch.__path__)[0])')"
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  "$CMAKE" -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-19 \
    -DETPROOF_SANITIZE=thread -DCMAKE_PREFIX_PATH="$ET_DIR" -DETPROOF_PYTHON="$ROOT/.venv/bin/python" >/dev/null
fi
"$CMAKE" --build "$BUILD" --target etproof etproof-worker -j"$(nproc)" 2>&1 | grep -vE '^\[ *[0-9]+%\]' || true
[[ -x "$BUILD/etproof" && -x "$BUILD/etproof-worker" ]] || { echo "error: the TSan build failed" >&2; exit 2; }

export OPENVINO_LIB_PATH=/nonexistent
# halt_on_error=0: every report of a run is listed; exitcode 66 tells a report from a failing matrix.
# The suppressions name only races inside ExecuTorch's own libraries, each with its reason (tsan.supp).
# ignore_noninstrumented_modules=1: the wheel's libraries (XNNPACK, its pthreadpool) are not
# instrumented, so TSan sees their memory accesses only through its interceptors (memcpy) and none
# of their synchronization (pthreadpool hands work to its threads and waits for it with atomics and
# futexes): it reported XNNPACK's own memcpy into its own buffer on the caller's thread against its
# pool thread's read of it, both inside libexecutorch_backend_xnnpack.so, under `--in-process`
# (2026-12-06). Accesses made from uninstrumented code are not judged; etproof's own are.
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 print_suppressions=1 ignore_noninstrumented_modules=1 suppressions=$ROOT/scripts/tsan.supp"
dirs=("$ROOT/build/test-bundles")
for d in "$ROOT"/build/test-bundles/*/; do
  compgen -G "$d*.etproof.json" >/dev/null || dirs+=("${d%/}")  # group folders, not bundles
done
LOG="$BUILD/tsan.log"
: >"$LOG"
status=0
ROUNDS="${ROUNDS:-3}"  # the races TSan can see depend on the scheduling: each mode runs ROUNDS times
for round in $(seq "$ROUNDS"); do
for mode in "" "--in-process"; do
  set +e
  "$BUILD/etproof" matrix --no-ledger --jobs 4 $mode "${dirs[@]}" >/dev/null 2>>"$LOG"
  rc=$?
  set -e
  reports=$(grep -c '^WARNING: ThreadSanitizer' "$LOG" || true)
  # A sanitizer that cannot run (a worker out of memory) checked nothing: not a clean result.
  if grep -qE 'ThreadSanitizer: (out of memory|internal allocator is out of memory)' "$LOG"; then
    echo "error: ThreadSanitizer ran out of memory in a process of this run (see $LOG): it checked nothing there" >&2
    status=2
  fi
  echo "round $round: matrix --jobs 4 ${mode:-(worker processes)} over ${#dirs[@]} directories: exit $rc, ThreadSanitizer reports so far: $reports"
  # The test bundles include ones that must fail the matrix (verdicts/, kernel-missing/): exit 1 is a result.
  if [[ $rc == 66 || $reports != 0 ]]; then status=1; fi
  if [[ $rc != 0 && $rc != 1 && $rc != 66 ]]; then echo "error: matrix exited $rc (see $LOG)" >&2; status=2; fi
done
done
echo "suppressed (scripts/tsan.supp, inside ExecuTorch): $(grep -E '^ *[0-9]+ race:' "$LOG" | awk '{n+=$1} END {print n+0}') report(s)"
if [[ $status == 1 ]]; then grep -A12 '^WARNING: ThreadSanitizer' "$LOG" | head -80; fi
echo "tsan: $([[ $status == 0 ]] && echo clean || echo "NOT clean ($LOG)")"
exit $status
