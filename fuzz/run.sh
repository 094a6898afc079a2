#!/usr/bin/env bash
# fuzz/run.sh — run one harness for as long as asked, then minimise every crash it found into a
# regression folder (fuzz/README.md).
#
#   fuzz/run.sh HARNESS [SECONDS] [LIBFUZZER_FLAG...]
#
# HARNESS: manifest | npy | xfail | ledger | bundle | image | bpte. SECONDS: default 600; 0: do not fuzz, only
# file the crashes an earlier run left in build-fuzz/artifacts/HARNESS/. Extra flags go to
# libFuzzer (e.g. -jobs=2 -workers=2). Needs the fuzz build (./setup.sh --no-run --fuzz builds
# build-fuzz/); the harness is rebuilt first when its sources changed.
#
# It runs in libFuzzer's fork mode with crashes, out-of-memory and timeouts ignored, so one crash
# (ExecuTorch's, say) does not end the run: every one is kept under build-fuzz/artifacts/HARNESS/.
# New inputs that add coverage go to build-fuzz/corpus/HARNESS/ (not committed; the committed
# seeds in fuzz/corpus/HARNESS/ and fuzz/crashes/HARNESS/ are read, never written). At the end the
# crashes are de-duplicated by their top stack frames, and one of each is minimised
# (-minimize_crash, at most 30 s) and filed, with its stack in NAME.txt:
#   fuzz/crashes/HARNESS/           its first frame is in etproof's code (cpp/, fuzz/): fix it;
#                                   the regression run (fuzz/regress.sh) replays it ever after
#   fuzz/crashes-upstream/HARNESS/  its first frame is outside etproof (ExecuTorch, a delegate):
#                                   never replayed by the tests
# Read the stack before committing either: the filing is a heuristic.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
H="${1:?usage: fuzz/run.sh HARNESS [SECONDS] [LIBFUZZER_FLAG...]}"
SECONDS_ASKED="${2:-600}"
shift $(( $# >= 2 ? 2 : 1 ))
BUILD="$ROOT/build-fuzz"
BIN="$BUILD/fuzz/fuzz_$H"
case "$H" in manifest|npy|xfail|ledger|bundle|image|bpte) ;; *) echo "error: unknown harness '$H' (manifest, npy, xfail, ledger, bundle, image, bpte)" >&2; exit 2;; esac
[[ -f "$BUILD/CMakeCache.txt" ]] || { echo "error: no fuzz build in $BUILD: run ./setup.sh --no-run --fuzz" >&2; exit 2; }
CMAKE="$ROOT/.venv/bin/cmake"; [[ -x "$CMAKE" ]] || CMAKE=cmake
"$CMAKE" --build "$BUILD" --target "fuzz_$H" -j"$(nproc)" >/dev/null
export OPENVINO_LIB_PATH="${OPENVINO_LIB_PATH:-/nonexistent}"  # ASan refuses RTLD_DEEPBIND (README)
export ETPROOF_TEST_BUNDLES="${ETPROOF_TEST_BUNDLES:-$ROOT/build/test-bundles}"

WORK="$BUILD/corpus/$H"
ART="$BUILD/artifacts/$H"
mkdir -p "$WORK" "$ART" "$ROOT/fuzz/crashes/$H"
DICT=(); [[ -f "$ROOT/fuzz/dict/$H.dict" ]] && DICT=(-dict="$ROOT/fuzz/dict/$H.dict")
LOG="$BUILD/fuzz-$H.log"
if [[ "$SECONDS_ASKED" == 0 ]]; then
  echo "not fuzzing (SECONDS 0): filing the crashes already in ${ART#$ROOT/}/"
else
echo "fuzzing $H for ${SECONDS_ASKED}s (log: $LOG)"
# While fuzzing, ASan neither symbolizes a crash's stack (each one ran llvm-symbolizer over
# ExecuTorch's libraries: 5% of a bundle run) nor records where each allocation was made (12% of
# a bundle run, 9% of a JSON one). What it detects is unchanged; every crash is re-run below with
# ASan's defaults, full stacks and all, before it is filed. An ASAN_OPTIONS of your own wins.
set +e
ASAN_OPTIONS="${ASAN_OPTIONS:-symbolize=0:malloc_context_size=0}" "$BIN" -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
  -max_total_time="$SECONDS_ASKED" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$ART/" \
  -print_final_stats=1 "${DICT[@]}" "$@" \
  "$WORK" "$ROOT/fuzz/corpus/$H" "$ROOT/fuzz/crashes/$H" >"$LOG" 2>&1
rc=$?
set -e
execs="$(grep -oE '^#[0-9]+' "$LOG" | tail -1 | tr -d '#')"
echo "exit $rc; executions: ${execs:-?} (last status line: $(grep -E '^#[0-9]+' "$LOG" | tail -1))"
fi

# A crash's top frames, without the sanitizers', libc's, libstdc++'s, libFuzzer's and ExecuTorch's
# abort machinery: one line per frame, the function (or module+offset where it has no name) and,
# for code built here, the source file:line.
frames() {  # frames INPUT
  "$BIN" -runs=1 -timeout=10 -rss_limit_mb=2048 "$1" 2>&1 | grep -E '^ *#[0-9]+ 0x' \
    | grep -vE '^ *#[0-9]+ 0x[0-9a-f]+ in (strlen|memcpy|memmove|memset|memcmp|strcmp|strncmp|malloc|calloc|realloc|free|posix_memalign|aligned_alloc) ' \
    | grep -vE 'libclang_rt|compiler-rt|/sanitizer_common/|libc\.so|libc_start|csu/|nptl/|sysdeps/|stdlib/abort|libstdc\+\+|/c\+\+/12/|__interceptor|__sanitizer|__asan|__ubsan|LLVMFuzzerTestOneInput|fuzzer::|et_pal_abort|pal_abort|runtime_abort|operator new' \
    | sed -E 's/^ *#[0-9]+ 0x[0-9a-f]+ (in )?//; s/ \(BuildId: [0-9a-f]+\)//; s/\(((std|executorch|torch|etproof)::|unsigned|long|char|void|int|bool|float|double|short|const)[^()]*(\([^()]*\)[^()]*)*\)( const)?//' \
    | head -4 || true
}
# Paths in notes: relative to the source tree, ExecuTorch's libraries as executorch/lib/NAME.
short() { sed -E "s|$ROOT/||g; s|[^ (]*/executorch/lib/cmake/executorch/\.\./\.\./\.\./lib/|executorch/lib/|g"; }
shopt -s nullglob
declare -A seen=()
n_ours=0; n_up=0; n_dup=0
# Every crash re-run once for its frames, one process per core (a 10^7 bundle run leaves ~1,000
# crashes inside ExecuTorch, a second or so each), then de-duplicated and filed one at a time.
SIGS="$(mktemp -d)"
trap 'rm -rf "$SIGS"' EXIT
export BIN
export -f frames
for a in "$ART"/crash-* "$ART"/oom-* "$ART"/timeout-* "$ART"/leak-*; do
  [[ "$a" == *.min ]] || printf '%s\0' "$a"
done | xargs -0 -r -P "$(nproc)" -I{} bash -c 'frames "$1" > "$2/$(basename "$1").sig"' _ {} "$SIGS"
for a in "$ART"/crash-* "$ART"/oom-* "$ART"/timeout-* "$ART"/leak-*; do
  [[ "$a" == *.min ]] && continue
  sig="$(cat "$SIGS/$(basename "$a").sig")"
  if [[ -z "$sig" ]]; then echo "$(basename "$a"): no longer crashes"; continue; fi
  # The signature: the frames without their directories (a frame without a name keeps its
  # module offset: the call site).
  key="$(printf '%s' "$sig" | sed -E 's|/[^ ()]*/||g' | sha1sum | cut -c1-12)"
  if [[ -n "${seen[$key]:-}" ]]; then n_dup=$((n_dup+1)); continue; fi
  seen[$key]=1
  min="$a.min"
  "$BIN" -minimize_crash=1 -max_total_time=30 -timeout=10 -rss_limit_mb=2048 -exact_artifact_path="$min" "$a" \
    >/dev/null 2>&1 || true
  [[ -s "$min" ]] || cp "$a" "$min"
  name="$(basename "$a" | cut -d- -f1)-$key"
  # etproof's when its first frame (after the sanitizers' and libc's own) is in etproof's source.
  if head -1 <<<"$sig" | grep -qF -e "$ROOT/cpp/" -e "$ROOT/fuzz/"; then
    dest="$ROOT/fuzz/crashes/$H"; n_ours=$((n_ours+1))
  else
    dest="$ROOT/fuzz/crashes-upstream/$H"; n_up=$((n_up+1))
  fi
  mkdir -p "$dest"
  cp "$min" "$dest/$name"
  { echo "fuzz_$H: $(basename "$a"), minimised ($(stat -c %s "$min") bytes), found by fuzz/run.sh on $(date -u +%F)"
    echo "reproduce: build-fuzz/fuzz/fuzz_$H ${dest#$ROOT/}/$name"
    "$BIN" -runs=1 -timeout=10 -rss_limit_mb=2048 "$min" 2>&1 | grep -m1 -E 'ERROR: |runtime error' | sed -E 's/^==[0-9]+== ?//' || true
    echo "top frames:"; echo "$sig" | short; } > "$dest/$name.txt"
  echo "$(basename "$a") -> ${dest#$ROOT/}/$name"
  echo "$sig" | short | sed 's/^/    /'
done
echo "crashes: $n_ours distinct in etproof (fuzz/crashes/$H), $n_up distinct upstream (fuzz/crashes-upstream/$H), $n_dup duplicates"
