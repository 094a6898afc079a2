#!/usr/bin/env bash
# etproof — set everything up and run the main job on real input.
#
#   ./setup.sh            install (Debian packages, .venv), build (build/etproof), export the
#                         demo bundles and the golden set, then run the main job: backends,
#                         classify, matrix.
#   ./setup.sh --no-run   everything except the main job.
#   ./setup.sh --fuzz     also clang and libFuzzer (Debian clang-19, libclang-rt-19-dev, llvm-19),
#                         Chromium (headless: the HTML page's test) and the sanitizer build
#                         build-fuzz/: the libFuzzer harnesses of fuzz/ and the C++ tests
#                         under AddressSanitizer + UBSan (README "Reliability").
#                         test.sh uses ./setup.sh --no-run --fuzz.
#
# Re-running is fast: each step is skipped when its inputs did not change (stamps in build/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
RUN_MAIN=1
FUZZ=0
for arg in "$@"; do
  case "$arg" in
    --no-run) RUN_MAIN=0 ;;
    --fuzz) FUZZ=1 ;;
    *) echo "usage: ./setup.sh [--no-run] [--fuzz]" >&2; exit 2 ;;
  esac
done

VENV="$ROOT/.venv"
PY="$VENV/bin/python"
BUILD="$ROOT/build"
mkdir -p "$BUILD"

step() { printf '\n== %s\n' "$*"; }
hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }
# pip, quiet; this machine's extra local indexes make pip warn once per package: drop those lines.
pip_install() { "$PY" -m pip install -q "$@" 2> >(grep -v 'is ignored: it is neither a file' >&2); }

# --- 1. Debian packages (C++ libraries the runtime half uses; see README "Dependencies") -------
DEBS=(build-essential nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libstb-dev libssl-dev)
# --fuzz: clang and libFuzzer (bookworm's newest clang; 14, its default, cannot capture structured
# bindings in lambdas, which cpp/src uses; llvm-19 for llvm-symbolizer: sanitizer stacks with
# function names), without their recommendations (about 70 MB); and Debian's chromium (test.sh
# runs ./setup.sh --no-run --fuzz, so the test machine has it).
FUZZ_DEBS=(clang-19 libclang-rt-19-dev llvm-19
           # the headless browser the CTest matrix_html.renders_in_chromium loads `matrix --html`'s
           # page in (console errors, every cell shown); the test skips by name without it
           chromium)
missing=(); fuzz_missing=()
for p in "${DEBS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((FUZZ)); then
  for p in "${FUZZ_DEBS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || fuzz_missing+=("$p"); done
fi
if ((${#missing[@]} + ${#fuzz_missing[@]})); then
  step "installing Debian packages: ${missing[*]} ${fuzz_missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
  fi
  if ((${#fuzz_missing[@]})); then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${fuzz_missing[@]}"
  fi
fi

# --- 2. Python environment (export half). torch first: the CPU build, never a CUDA one ---------
PY_STAMP="$BUILD/.stamp-venv"
py_key="$(hash_of requirements.txt python/pyproject.toml)"
if [[ ! -x "$PY" || "$(cat "$PY_STAMP" 2>/dev/null)" != "$py_key" ]]; then
  step "creating .venv (torch 2.13.0 CPU, executorch 1.5.1, …)"
  [[ -x "$PY" ]] || python3 -m venv "$VENV"
  pip_install --upgrade pip
  pip_install "torch==2.13.0"
  pip_install -r requirements.txt
  pip_install --no-deps -e python
  echo "$py_key" > "$PY_STAMP"
fi
ET_DIR="$("$PY" -c 'import executorch; print(list(executorch.__path__)[0])')"
if [[ ! -f "$ET_DIR/share/cmake/executorch-config.cmake" ]]; then
  echo "error: the installed executorch wheel ships no C++ SDK ($ET_DIR/share/cmake missing)" >&2
  exit 2
fi

# --- 3. Runtime half: build/etproof (CMake >= 3.28 from the venv, pinned in requirements.txt) ---
step "building the runtime half (build/etproof)"
CMAKE="$VENV/bin/cmake"
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  "$CMAKE" -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$ET_DIR" -DETPROOF_PYTHON="$PY" >/dev/null
fi
"$CMAKE" --build "$BUILD" -j"$(nproc)" 2>&1 | grep -vE '^\[ *[0-9]+%\]' || true
[[ -x "$BUILD/etproof" ]] || { echo "error: build failed (build/etproof missing)" >&2; exit 2; }

# --- 3b. --fuzz: the sanitizer build (build-fuzz/: clang, -DETPROOF_FUZZ=ON, address+undefined):
# the libFuzzer harnesses (fuzz/) and the C++ tests. The exported bundles are build/'s, shared.
if ((FUZZ)); then
  FUZZ_BUILD="$ROOT/build-fuzz"
  step "building the sanitizer build (build-fuzz: fuzz harnesses and C++ tests, clang, ASan + UBSan)"
  if [[ ! -f "$FUZZ_BUILD/CMakeCache.txt" ]]; then
    "$CMAKE" -S "$ROOT" -B "$FUZZ_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-19 \
      -DETPROOF_FUZZ=ON -DCMAKE_PREFIX_PATH="$ET_DIR" -DETPROOF_PYTHON="$PY" >/dev/null
  fi
  for d in test-bundles demo golden-set; do
    if [[ -L "$FUZZ_BUILD/$d" || ! -e "$FUZZ_BUILD/$d" ]]; then ln -sfn "$BUILD/$d" "$FUZZ_BUILD/$d"; fi
  done
  "$CMAKE" --build "$FUZZ_BUILD" -j"$(nproc)" 2>&1 | grep -vE '^\[ *[0-9]+%\]' || true
  [[ -x "$FUZZ_BUILD/etproof_tests" && -x "$FUZZ_BUILD/fuzz/fuzz_bundle" ]] \
    || { echo "error: the sanitizer build failed (build-fuzz/etproof_tests or fuzz/fuzz_bundle missing)" >&2; exit 2; }
fi

# --- 4. Export half: the demo bundles (cached by the export half itself) ----------------------
step "exporting the demo bundles (EfficientNet-Lite0, every column that lowers here)"
"$PY" -m etproof demo --out "$BUILD/demo"
step "exporting the golden set (MiniLM-L6-v2, MobileNetV3-Small, 13 op goldens; EfficientNet from the demo)"
"$PY" -m etproof golden-set --out "$BUILD/golden-set" --reuse "$BUILD/demo"

[[ $RUN_MAIN -eq 1 ]] || exit 0

# --- 5. The main job: what this binary can run, the demo classified, then the verdict ---------
step "etproof backends"
"$PY" -m etproof test-bundles --out "$BUILD/test-bundles" >/dev/null 2>&1 \
  || echo "warning: test bundles not exported: the runtime probes will say no-bundle" >&2
"$BUILD/etproof" backends
step "etproof classify (each demo photo, on the best runnable backend)"
for photo in "$BUILD"/demo/photos/*; do
  "$BUILD/etproof" classify "$photo" --top 3
done
step "etproof matrix build/golden-set/bundles (every golden on every column, against its own bound)"
matrix_rc=0
"$BUILD/etproof" matrix "$BUILD/golden-set/bundles" || matrix_rc=$?
exit "$matrix_rc"
