#!/usr/bin/env bash
# etproof — run every test (CTest for the runtime half, pytest for the export half, then the C++
# tests again under AddressSanitizer + UBSan, the fuzz regression run, and matrix --jobs under
# ThreadSanitizer: docs/reliability.md).
# Sets up whatever is missing first (./setup.sh --no-run --fuzz), and exports the small test
# bundles once (reused while their inputs are unchanged).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
BUILD="$ROOT/build"
PY="$ROOT/.venv/bin/python"

./setup.sh --no-run --fuzz
printf '\n== exporting the test bundles\n'
"$PY" -m etproof test-bundles --out "$BUILD/test-bundles"

rc=0
printf '\n== C++ tests (CTest)\n'
(cd "$BUILD" && "$ROOT/.venv/bin/ctest" --output-on-failure -j2) || rc=1
printf '\n== Python tests (pytest)\n'
"$PY" -m pytest python/tests -q -rs || rc=1
# The sanitizer build (build-fuzz/, sharing build/'s bundles). OpenVINO's runtime is loaded with
# RTLD_DEEPBIND, which AddressSanitizer refuses: OpenVINO is off there (its column unavailable; the
# tests that count it skip by name). Left out: consumer.*, gen.* and app.* (the installed package
# built by an uninstrumented consumer, the generated API and examples/app: packaging checks, done
# above) and golden_set.* (the whole golden set replayed: done above, and the slowest under ASan).
printf '\n== C++ tests under AddressSanitizer + UBSan (build-fuzz)\n'
(cd "$ROOT/build-fuzz" && OPENVINO_LIB_PATH=/nonexistent "$ROOT/.venv/bin/ctest" --output-on-failure -j2 \
   -E '^(consumer|gen|app|golden_set)\.') || rc=1
printf '\n== fuzz regression (fuzz/regress.sh)\n'
fuzz/regress.sh || rc=1
# matrix --jobs under ThreadSanitizer (build-tsan/: the CLI and its worker), isolated and in-process.
printf '\n== matrix --jobs 4 under ThreadSanitizer (scripts/tsan.sh)\n'
scripts/tsan.sh || rc=1
exit "$rc"
