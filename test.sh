#!/usr/bin/env bash
# etproof — run every test (CTest for the runtime half, pytest for the export half).
# Sets up whatever is missing first (./setup.sh --no-run), and exports the small test bundles
# once (reused while their inputs are unchanged).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
BUILD="$ROOT/build"
PY="$ROOT/.venv/bin/python"

./setup.sh --no-run
printf '\n== exporting the test bundles\n'
"$PY" -m etproof test-bundles --out "$BUILD/test-bundles"

rc=0
printf '\n== C++ tests (CTest)\n'
(cd "$BUILD" && "$ROOT/.venv/bin/ctest" --output-on-failure -j2) || rc=1
printf '\n== Python tests (pytest)\n'
"$PY" -m pytest python/tests -q -rs || rc=1
exit "$rc"
