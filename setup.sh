#!/usr/bin/env bash
# etproof — set everything up and run the main job on real input.
#
#   ./setup.sh            install (Debian packages, .venv), build (build/etproof) and, beside
#                         the build, export the quick demo and golden set (the columns this
#                         x86-64 host runs; EfficientNet-Lite0, MobileNetV3-Small and the op
#                         goldens) and the runtime probes (the tiny model's test bundles),
#                         then run the main job: backends, classify, matrix.
#   ./setup.sh --full     the whole demo and golden set instead: every column (Core ML, Vulkan,
#                         WebGPU exported too; 8da4w, int8-weight-only) and every golden model
#                         (MiniLM-L6-v2 twice, a small Llama): about an hour more on 2 cores.
#   ./setup.sh --no-run   everything except the main job.
#   ./setup.sh --build-only  install and build only (steps 1, 2 and 4): no export, no main job — what a
#                         CI runner that replays bundles exported elsewhere needs
#                         (.github/workflows/on-device.yml, docs/ci.md).
#   ./setup.sh --test     also what the tests use besides the CLI: every build target (the test
#                         executables, the C ABI, the examples), all the test bundles, Debian's
#                         Chromium (headless: the HTML page's test). test.sh uses
#                         ./setup.sh --no-run --test.
#   ./setup.sh --fuzz     also clang and libFuzzer (Debian clang-19, libclang-rt-19-dev, llvm-19),
#                         Chromium, and the sanitizer build build-fuzz/: the libFuzzer harnesses
#                         of fuzz/ and the C++ tests under AddressSanitizer + UBSan
#                         (docs/reliability.md). test.sh --sanitizers uses ./setup.sh --no-run --fuzz.
#
# Re-running is fast: each step is skipped when its inputs did not change (stamps in build/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
RUN_MAIN=1
EXPORT=1
FULL=0
FUZZ=0
TEST=0
for arg in "$@"; do
  case "$arg" in
    --no-run) RUN_MAIN=0 ;;
    --build-only) RUN_MAIN=0; EXPORT=0 ;;
    --test) TEST=1 ;;
    --full) FULL=1 ;;
    --fuzz) FUZZ=1; TEST=1 ;;
    *) echo "usage: ./setup.sh [--no-run | --build-only] [--test | --fuzz] [--full]" >&2; exit 2 ;;
  esac
done

VENV="$ROOT/.venv"
PY="$VENV/bin/python"
BUILD="$ROOT/build"
mkdir -p "$BUILD"

step() { printf '\n== %s\n' "$*"; }
# macOS has neither sha256sum nor nproc (GNU coreutils): shasum and getconf are on both.
if command -v sha256sum >/dev/null; then SHA256=(sha256sum); else SHA256=(shasum -a 256); fi
hash_of() { cat "$@" 2>/dev/null | "${SHA256[@]}" | cut -c1-16; }
NPROC="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
OS="$(uname -s)"
# pip, quiet; this machine's extra local indexes make pip warn once per package: drop those lines.
pip_install() { "$PY" -m pip install -q "$@" 2> >(grep -v 'is ignored: it is neither a file' >&2); }

# --- 1. Debian packages (C++ libraries the runtime half uses; see docs/dependencies.md) -------
DEBS=(build-essential nlohmann-json3-dev libvalijson-dev libcli11-dev libgtest-dev libgmock-dev libstb-dev libssl-dev libjpeg-dev
      flatbuffers-compiler libflatbuffers-dev)
# The runtime half on emulated Arm CPUs (matrix --emulate, etproof/emulation.h): Debian's cross
# compiler and QEMU's user-mode emulator on an x86-64 host, and the arm64 libraries the
# cross-built worker links and runs with (multiarch: dpkg --add-architecture arm64).
ARM64_DEBS=()
ARM64_LIBS=()
if [[ "$(uname -m)" == x86_64 ]] && command -v dpkg >/dev/null; then
  ARM64_DEBS=(g++-aarch64-linux-gnu qemu-user)
  ARM64_LIBS=(libssl-dev:arm64 libstdc++6:arm64)
fi
# --fuzz: clang and libFuzzer (bookworm's newest clang; 14, its default, cannot capture structured
# bindings in lambdas, which cpp/src uses; llvm-19 for llvm-symbolizer: sanitizer stacks with
# function names), without their recommendations (about 70 MB); and Debian's chromium (test.sh
# runs ./setup.sh --no-run --fuzz, so the test machine has it).
FUZZ_DEBS=(clang-19 libclang-rt-19-dev llvm-19)
# --test (and --fuzz): the headless browser the CTest matrix_html.renders_in_chromium loads
# `matrix --html`'s page in (console errors, every cell shown); the test skips by name without it
TEST_DEBS=(chromium)
# macOS: Homebrew instead (the compiler is Xcode's Command Line Tools: xcode-select --install).
# No libstb there: pass its header's directory (CMakeLists.txt compiles stb_image in itself).
BREWS=(python@3.11 nlohmann-json valijson cli11 googletest openssl@3 jpeg-turbo flatbuffers)
if [[ "$OS" == Darwin ]]; then
  if ((FUZZ)); then
    echo "error: --fuzz is Linux-only (memfd_create, libFuzzer, Debian's chromium)" >&2; exit 2
  fi
  TEST_DEBS=()  # no Debian chromium: the HTML page's test skips by name
  command -v brew >/dev/null || { echo "error: macOS needs Homebrew (https://brew.sh) for: ${BREWS[*]}" >&2; exit 2; }
  brew_missing=()
  for p in "${BREWS[@]}"; do brew list --versions "$p" >/dev/null 2>&1 || brew_missing+=("$p"); done
  if ((${#brew_missing[@]})); then
    step "installing Homebrew formulae: ${brew_missing[*]}"
    brew install "${brew_missing[@]}"
  fi
  DEBS=(); FUZZ_DEBS=()
elif ! command -v dpkg >/dev/null; then
  echo "warning: neither Debian's apt nor macOS: install ${DEBS[*]} (or their equivalents) yourself" >&2
  DEBS=(); FUZZ_DEBS=(); TEST_DEBS=()
fi
# deb_installed PKG[:ARCH]: installed for ARCH (default: this machine's) or as an arch-all package.
# Not `dpkg -s`: once libssl-dev:arm64 is installed beside libssl-dev, `dpkg -s libssl-dev` is an
# ambiguous name (exit 2), and every re-run would apt-get update and install again.
deb_installed() {
  local want="${1#*:}"
  [[ "$1" == *:* ]] || want="$(dpkg --print-architecture)"
  dpkg-query -W -f='${Architecture} ${db:Status-Status}\n' "$1" 2>/dev/null | grep -qE "^($want|all) installed$"
}
missing=(); fuzz_missing=(); arm64_missing=()
for p in ${DEBS[@]+"${DEBS[@]}"} ${ARM64_DEBS[@]+"${ARM64_DEBS[@]}"}; do deb_installed "$p" || missing+=("$p"); done
for p in ${ARM64_LIBS[@]+"${ARM64_LIBS[@]}"}; do deb_installed "$p" || arm64_missing+=("$p"); done
if ((FUZZ)); then
  for p in ${FUZZ_DEBS[@]+"${FUZZ_DEBS[@]}"}; do deb_installed "$p" || fuzz_missing+=("$p"); done
fi
if ((TEST)); then
  for p in ${TEST_DEBS[@]+"${TEST_DEBS[@]}"}; do deb_installed "$p" || fuzz_missing+=("$p"); done
fi
if ((${#missing[@]} + ${#fuzz_missing[@]} + ${#arm64_missing[@]})); then
  step "installing Debian packages: ${missing[*]} ${fuzz_missing[*]} ${arm64_missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  if ((${#arm64_missing[@]})) && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
  fi
  $SUDO apt-get update -q
  if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
  fi
  if ((${#fuzz_missing[@]})); then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${fuzz_missing[@]}"
  fi
  if ((${#arm64_missing[@]})); then  # --no-remove: an arm64 library never displaces an amd64 package
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-remove "${arm64_missing[@]}" \
      || echo "warning: the arm64 libraries did not install: matrix --emulate will say it cannot run here" >&2
  fi
fi

# --- 2. Python environment (export half). torch first: the CPU build, never a CUDA one ---------
PY_STAMP="$BUILD/.stamp-venv"
py_key="$(hash_of requirements.txt python/pyproject.toml)"
if [[ ! -x "$PY" || "$(cat "$PY_STAMP" 2>/dev/null)" != "$py_key" ]]; then
  step "creating .venv (torch 2.13.0 CPU, executorch 1.5.1, …)"
  PYTHON3=python3  # macOS's own python3 (Command Line Tools) is 3.9: torch 2.13 needs >= 3.10
  if [[ "$OS" == Darwin ]]; then PYTHON3="$(brew --prefix python@3.11)/bin/python3.11"; fi
  [[ -x "$PY" ]] || "$PYTHON3" -m venv "$VENV"
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

# --- 3. Export half, beside the build: the demo bundles, the golden set, the test bundles -------
# One lane in the background while the runtime half compiles (an export is one Python process on
# one core; the compiler takes the rest): the demo (EfficientNet-Lite0), then the golden set
# (EfficientNet copied from the demo) with up to 4 models at once; beside them the small test
# bundles (--test).
# Without --full both are the quick ones (`--quick`: the columns whose runtime this host links;
# EfficientNet-Lite0, MobileNetV3-Small and the 13 op goldens); --full exports every column that
# lowers here and adds MiniLM-L6-v2 (fixed and dynamic sequence) and a small Llama. The test
# bundles only with --test (test.sh); the main job needs the tiny model's alone. Each bundle
# is cached by stamp (a re-run with nothing changed exports nothing). Its output goes to
# build/export-lane.log and is shown when it ends.
EXPORT_JOBS=$((NPROC < 4 ? NPROC : 4))
TIER=(--quick); TIER_WHAT="the quick set: the columns this host runs"
if ((FULL)); then TIER=(); TIER_WHAT="every column that lowers here"; fi
export_lane() {
  # The test bundles beside the demo and the golden set (their own log, appended at the end): with
  # the compiler done first, one lane alone would leave a core idle for most of its time.
  local tests_pid="" rc=0
  if ((TEST)); then
    "$PY" -m etproof test-bundles --out "$BUILD/test-bundles" >"$BUILD/test-bundles-lane.log" 2>&1 &
    tests_pid=$!
  fi
  printf '\n== exporting the demo bundles (EfficientNet-Lite0, %s)\n' "$TIER_WHAT"
  "$PY" -m etproof demo --out "$BUILD/demo" ${TIER[@]+"${TIER[@]}"} || rc=$?
  if ((rc == 0)); then
    printf '\n== exporting the golden set (%s; EfficientNet from the demo)\n' "$TIER_WHAT"
    "$PY" -m etproof golden-set --out "$BUILD/golden-set" --reuse "$BUILD/demo" --jobs "$EXPORT_JOBS" \
      ${TIER[@]+"${TIER[@]}"} || rc=$?
  fi
  if [[ -n "$tests_pid" ]]; then
    local tests_rc=0
    wait "$tests_pid" || tests_rc=$?
    printf '\n== exporting the test bundles (beside the demo and the golden set)\n'
    cat "$BUILD/test-bundles-lane.log"
    ((rc)) || rc=$tests_rc
  else  # the main job's `etproof backends` replays the tiny model's alone (its runtime probes)
    printf '\n== exporting the runtime probes of etproof backends (the tiny test bundles)\n'
    ((rc)) || "$PY" -m etproof test-bundles --out "$BUILD/test-bundles" --probes-only || rc=$?
  fi
  return "$rc"
}
LANE_PID=""
if ((EXPORT)); then
  step "exporting the bundles beside the build (output: build/export-lane.log, shown when it ends)"
  set -m  # the lane in a process group of its own: a failed build or an interrupt ends all of it
  export_lane >"$BUILD/export-lane.log" 2>&1 &
  LANE_PID=$!
  set +m
  trap '[[ -n "$LANE_PID" ]] && kill -- "-$LANE_PID" 2>/dev/null; true' EXIT
fi

# --- 4. Runtime half: build/etproof (CMake >= 3.28 from the venv, pinned in requirements.txt) ---
step "building the runtime half (build/etproof)"
CMAKE="$VENV/bin/cmake"
CMAKE_PREFIXES="$ET_DIR"; EXTRA_CMAKE=()
if [[ "$OS" == Darwin ]]; then  # Homebrew's prefix, and its keg-only OpenSSL
  CMAKE_PREFIXES="$ET_DIR;$(brew --prefix)"
  EXTRA_CMAKE=(-DOPENSSL_ROOT_DIR="$(brew --prefix openssl@3)")
fi
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  "$CMAKE" -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$CMAKE_PREFIXES" ${EXTRA_CMAKE[@]+"${EXTRA_CMAKE[@]}"} -DETPROOF_PYTHON="$PY" >/dev/null
fi
# The main job needs the CLI and its worker alone; --test (test.sh) and --fuzz build everything
# (the test binaries, the C ABI, the examples: about half of the compile).
BUILD_TARGETS=(--target etproof etproof-worker)
if ((TEST)); then BUILD_TARGETS=(); fi
"$CMAKE" --build "$BUILD" -j"$NPROC" ${BUILD_TARGETS[@]+"${BUILD_TARGETS[@]}"} 2>&1 | grep -vE '^\[ *[0-9]+%\]' || true
[[ -x "$BUILD/etproof" ]] || { echo "error: build failed (build/etproof missing)" >&2; exit 2; }

# --- 4a. The worker cross-built for aarch64 (build/arm64/build/etproof-worker) for matrix --emulate:
# the aarch64 executorch wheel of the same version, downloaded by pip for that platform, its C++ SDK
# (lib, include, share) unpacked under build/arm64/sdk. Where the cross compiler or the arm64
# libraries are missing it is skipped, and --emulate says so by name.
if ((${#ARM64_DEBS[@]})) && command -v aarch64-linux-gnu-g++ >/dev/null && [[ -e /usr/lib/aarch64-linux-gnu/libcrypto.so ]]; then
  step "cross-building the worker for aarch64 (build/arm64: matrix --emulate arm64/CPU)"
  ARM64="$BUILD/arm64"
  ET_VERSION="$("$PY" -c 'import importlib.metadata as m; print(m.version("executorch"))')"
  if [[ "$(cat "$ARM64/.stamp-sdk" 2>/dev/null)" != "$ET_VERSION" ]]; then
    rm -rf "$ARM64/wheel" "$ARM64/sdk"
    "$PY" -m pip download -q "executorch==$ET_VERSION" --platform manylinux_2_28_aarch64 --only-binary=:all: \
      --no-deps --python-version "$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" -d "$ARM64/wheel" 2> >(grep -v 'is ignored: it is neither a file' >&2)
    "$PY" - "$ARM64/wheel" "$ARM64/sdk" <<'PYEOF'
import pathlib, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("executorch-*.whl"))
with zipfile.ZipFile(wheel) as z:  # the C++ SDK alone: lib/, include/, share/
    z.extractall(sys.argv[2], [n for n in z.namelist()
                               if n.startswith(("executorch/lib/", "executorch/include/", "executorch/share/"))])
PYEOF
    rm -rf "$ARM64/wheel"
    echo "$ET_VERSION" > "$ARM64/.stamp-sdk"
  fi
  if [[ ! -f "$ARM64/build/CMakeCache.txt" ]]; then
    # -O1: the worker's own code is glue around ExecuTorch's prebuilt aarch64 kernels; -O3 made
    # this step about 6 minutes of a clean clone on 2 cores (AMD EPYC VM, 2026-12-06).
    "$CMAKE" -S "$ROOT" -B "$ARM64/build" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu.cmake" \
      -DETPROOF_WORKER_ONLY=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
      -DCMAKE_PREFIX_PATH="$ARM64/sdk/executorch" >/dev/null
  fi
  # Errors alone: GCC 12's -Wrestrict false positive inside libstdc++'s std::string (GCC bug
  # 105329) fills the aarch64 build's log otherwise.
  "$CMAKE" --build "$ARM64/build" -j"$NPROC" --target etproof-worker 2>&1 | grep -E ': error:|Error [0-9]' || true
  [[ -x "$ARM64/build/etproof-worker" ]] || echo "warning: the aarch64 worker did not build: matrix --emulate will say it cannot run here" >&2
fi

# --- 4b. --fuzz: the sanitizer build (build-fuzz/: clang, -DETPROOF_FUZZ=ON, address+undefined):
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
  "$CMAKE" --build "$FUZZ_BUILD" -j"$NPROC" 2>&1 | grep -vE '^\[ *[0-9]+%\]' || true
  [[ -x "$FUZZ_BUILD/etproof_unit_tests" && -x "$FUZZ_BUILD/etproof_tests" && -x "$FUZZ_BUILD/fuzz/fuzz_bundle" ]] \
    || { echo "error: the sanitizer build failed (build-fuzz/etproof_unit_tests, etproof_tests or fuzz/fuzz_bundle missing)" >&2; exit 2; }
fi

[[ $EXPORT -eq 1 ]] || { step "built (--build-only: nothing exported, no main job)"; exit 0; }

# --- 5. The export lane's end: its output, and its failure stops here -------------------------
step "waiting for the export lane (build/export-lane.log)"
lane_rc=0
wait "$LANE_PID" || lane_rc=$?
LANE_PID=""
cat "$BUILD/export-lane.log"
if ((lane_rc)); then
  echo "error: the export lane failed (exit $lane_rc): its output is above and in build/export-lane.log" >&2
  exit "$lane_rc"
fi

[[ $RUN_MAIN -eq 1 ]] || exit 0

# --- 6. The main job: what this binary can run, the demo classified, then the verdict ---------
step "etproof backends"
"$BUILD/etproof" backends
step "etproof classify (each demo photo, on the best runnable backend)"
for photo in "$BUILD"/demo/photos/*; do
  "$BUILD/etproof" classify "$photo" --top 3
done
step "etproof matrix build/golden-set/bundles (every golden on every column, against its own bound)"
matrix_rc=0
"$BUILD/etproof" matrix "$BUILD/golden-set/bundles" || matrix_rc=$?
exit "$matrix_rc"
