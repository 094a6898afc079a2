#!/usr/bin/env bash
# etproof — record which C++ SDK components each executorch wheel ships, as the fixtures of the
# CMake test cmake.delegates_for_each_wheel (tests/cmake/check_delegates.cmake).
#
#   scripts/wheel-components.sh    after bumping executorch in requirements.txt; commit the result
#
# For each platform below, downloads the pinned wheel (pip download --no-deps, any host: no
# install, no Mac needed) and writes tests/cmake/wheel-<name>.txt: the wheel's file name, its
# platform as CMake names it, the CMake config files it ships (with their SHA-256), every
# `_executorch_define_component(<component> <library>)` call of its config (the config defines a
# component exactly when lib/lib<library>.{so,dylib} exists) and the libraries under
# executorch/lib/. The test derives the components from these lines the way the config does.
# Override the version with ET_VERSION=..., the interpreter with PYTHON=....
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
ET_VERSION="${ET_VERSION:-$(sed -n 's/^executorch==\([^ ;#]*\).*/\1/p' requirements.txt)}"
[[ -n "$ET_VERSION" ]] || { echo "error: no executorch==VERSION in requirements.txt (set ET_VERSION)" >&2; exit 2; }
OUT_DIR="$ROOT/tests/cmake"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/etproof-wheels.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# name  pip --platform tag  platform as CMake names it (CMAKE_SYSTEM_NAME-CMAKE_SYSTEM_PROCESSOR)
PLATFORMS=(
  "linux-x86_64 manylinux_2_28_x86_64 Linux-x86_64"
  "macos-arm64 macosx_14_0_arm64 Darwin-arm64"
)

for entry in "${PLATFORMS[@]}"; do
  read -r name tag cmake_platform <<<"$entry"
  dl="$TMP/$name"
  mkdir -p "$dl"
  echo "== executorch==$ET_VERSION for $tag" >&2
  "$PYTHON" -m pip download -q --only-binary=:all: --no-deps --platform "$tag" \
    "executorch==$ET_VERSION" -d "$dl" 2> >(grep -v 'is ignored: it is neither a file' >&2) >&2
  wheel="$(ls "$dl"/executorch-*.whl)"
  "$PYTHON" - "$wheel" "$cmake_platform" "$ET_VERSION" >"$OUT_DIR/wheel-$name.txt" <<'EOF'
import hashlib, os, re, sys, zipfile

wheel, platform, version = sys.argv[1:4]
z = zipfile.ZipFile(wheel)
names = sorted(i.filename for i in z.infolist() if not i.is_dir())
configs = [n for n in names if n.endswith("/executorch-config.cmake")]
if not configs:
    sys.exit(f"error: {os.path.basename(wheel)} ships no executorch-config.cmake (no C++ SDK)")
text = z.read(configs[0]).decode()
print("# The C++ SDK of one executorch wheel, as scripts/wheel-components.sh read it. Generated:")
print("# re-run that script rather than editing. Read by tests/cmake/check_delegates.cmake.")
print(f"wheel {os.path.basename(wheel)}")
print(f"version {version}")
print(f"platform {platform}")
for c in configs:
    print(f"config {c} sha256={hashlib.sha256(z.read(c)).hexdigest()}")
calls = re.findall(r"^\s*_executorch_define_component\(\s*(\w+)\s+(\w+)((?:\s+\w+)*)\s*\)",
                   text, re.M)
if not calls:
    sys.exit(f"error: no _executorch_define_component call in {configs[0]}: the config changed shape")
for component, library, flags in calls:
    print(" ".join(["component", component, library] + flags.split()))
for n in names:
    if re.fullmatch(r"executorch/lib/[^/]+", n):
        print(f"lib {n.rsplit('/', 1)[1]}")
EOF
  echo "   wrote tests/cmake/wheel-$name.txt" >&2
done
