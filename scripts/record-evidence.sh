#!/usr/bin/env bash
# etproof — record this machine's evidence into the project's ledger and re-render the coverage
# page from it (README "Evidence and the coverage page").
#
#   scripts/record-evidence.sh    after ./setup.sh (build/etproof, the demo, the golden set and the test bundles)
#
# Appends to evidence/ledger.jsonl (never rewrites it): `etproof backends` (both halves, every
# backend), `etproof matrix build/golden-set/bundles`, `etproof parity` on the XNNPACK fp32 demo bundle,
# `etproof bench --threads 1` on the demo bundles (performance records: the page's Speed section);
# then writes docs/backend-coverage.md from the ledger alone. Commit both files. Run it on a clean
# tree so the records name a commit without "+dirty" (the ledger and the page themselves do not
# count). A drifting matrix is recorded as such: this script fails only when a command errors.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ETPROOF="${ETPROOF:-build/etproof}"
LEDGER=evidence/ledger.jsonl
[[ -x "$ETPROOF" ]] || { echo "error: $ETPROOF is missing: run ./setup.sh first" >&2; exit 2; }

rc=0
"$ETPROOF" backends --ledger "$LEDGER" >/dev/null || rc=$?
if ((rc != 0)); then echo "error: etproof backends failed ($rc)" >&2; exit 2; fi
"$ETPROOF" matrix build/golden-set/bundles --ledger "$LEDGER" >/dev/null || rc=$?
if ((rc > 1)); then echo "error: etproof matrix failed ($rc)" >&2; exit 2; fi
rc=0
"$ETPROOF" parity build/demo/bundles/efficientnet_lite0-xnnpack-fp32 --ledger "$LEDGER" >/dev/null || rc=$?
if ((rc > 1)); then echo "error: etproof parity failed ($rc)" >&2; exit 2; fi
# Performance records (issue 12): every demo column that runs here, one thread, each in a worker.
rc=0
"$ETPROOF" bench build/demo/bundles --threads 1 --ledger "$LEDGER" >/dev/null || rc=$?
if ((rc > 1)); then echo "error: etproof bench failed ($rc)" >&2; exit 2; fi
"$ETPROOF" coverage --ledger "$LEDGER" --out docs/backend-coverage.md
echo "recorded: git add $LEDGER docs/backend-coverage.md && git commit -m 'evidence: …'"
