#!/usr/bin/env bash
# fuzz/make_corpus.sh — fill fuzz/corpus/<harness>/ with seeds from the real test bundles.
#
#   fuzz/make_corpus.sh [TEST_BUNDLES] [FUZZ_BUILD]
#
# TEST_BUNDLES: the exported test bundles (default build/test-bundles; python -m etproof
# test-bundles --out build/test-bundles writes them). FUZZ_BUILD (default build-fuzz): where the
# harnesses are built; when they are, the seeds are merged (libFuzzer -merge=1), keeping only those
# that add coverage, so the committed corpus stays small (a few hundred KB). Seeds:
#   manifest  every NAME.etproof.json, and tests/fixtures/manifest_v*.json
#   npy       every golden and reference .npy (smaller than 4 KiB)
#   xfail     data/*-xfail.json and every xfail.json among the bundles
#   ledger    records of evidence/ledger.jsonl, one per kind/half/status, each as it is (first
#             byte 0x00) and with ids to be fixed up (0x01; fuzz/ledger_fuzz.cpp), plus one
#             several-line chunk
#   bundle    one per base bundle of fuzz/bundle_fuzz.cpp: its selector byte, then its .pte
# The corpus is replaced, not added to: re-run it after the test bundles change format.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUNDLES="$(realpath "${1:-$ROOT/build/test-bundles}")"
FUZZ_BUILD="${2:-$ROOT/build-fuzz}"
[[ -d "$BUNDLES" ]] || { echo "error: no test bundles in $BUNDLES (python -m etproof test-bundles --out build/test-bundles)" >&2; exit 2; }
CORPUS="$ROOT/fuzz/corpus"
RAW="$(mktemp -d)"
trap 'rm -rf "$RAW"' EXIT
mkdir -p "$RAW"/{manifest,npy,xfail,ledger,bundle}

# A seed's file name: the SHA-1 of its bytes, as libFuzzer names what it writes.
put() {  # put HARNESS FILE
  cp "$2" "$RAW/$1/$(sha1sum "$2" | cut -c1-40)"
}

while IFS= read -r -d '' f; do put manifest "$f"; done < <(find "$BUNDLES" -name '*.etproof.json' -print0)
for f in "$ROOT"/tests/fixtures/manifest_v*.json; do put manifest "$f"; done
while IFS= read -r -d '' f; do put npy "$f"; done < <(find "$BUNDLES" -name '*.npy' -size -4k -print0)
for f in "$ROOT"/data/*-xfail.json; do put xfail "$f"; done
while IFS= read -r -d '' f; do put xfail "$f"; done < <(find "$BUNDLES" -name xfail.json -print0)

python3 - "$ROOT/evidence/ledger.jsonl" "$RAW/ledger" <<'PY'
import hashlib, json, sys
src, out = sys.argv[1], sys.argv[2]
def put(data: bytes):
    with open(f"{out}/{hashlib.sha1(data).hexdigest()}", "wb") as f:
        f.write(data)
seen, lines = set(), []
for line in open(src, encoding="utf-8"):
    if not line.strip():
        continue
    r = json.loads(line)
    key = (r.get("kind"), r.get("half"), r.get("status"), "numbers" in r)
    if key in seen:
        continue
    seen.add(key)
    lines.append(line.encode())
for line in lines:
    put(b"\x00" + line)
    put(b"\x01" + line)
put(b"\x00" + b"".join(lines[:8]))
PY

# fuzz/bundle_fuzz.cpp's kBases, in its order (the selector byte is the index).
BASES=(tiny-portable-fp32 tiny-xnnpack-fp32 tiny-xnnpack-int8-dynamic-per-channel
       methods/encdec-xnnpack-fp32 shapes/dynbatch-portable-fp32 shapes/tokens-portable-fp32)
grep -q '"methods/encdec-xnnpack-fp32", "shapes/dynbatch-portable-fp32", "shapes/tokens-portable-fp32"' \
  "$ROOT/fuzz/bundle_fuzz.cpp" || { echo "error: BASES here differs from kBases in fuzz/bundle_fuzz.cpp" >&2; exit 2; }
for i in "${!BASES[@]}"; do
  b="${BASES[$i]}"
  pte="$BUNDLES/$b/$(basename "$b").pte"
  { printf "\\x$(printf %02x "$i")"; cat "$pte"; } > "$RAW/bundle/seed"
  put bundle "$RAW/bundle/seed"
  rm "$RAW/bundle/seed"
done

for h in manifest npy xfail ledger bundle; do
  rm -rf "$CORPUS/$h"
  mkdir -p "$CORPUS/$h"
  bin="$FUZZ_BUILD/fuzz/fuzz_$h"
  if [[ -x "$bin" ]]; then
    ETPROOF_TEST_BUNDLES="$BUNDLES" "$bin" -merge=1 "$CORPUS/$h" "$RAW/$h" >"$RAW/merge-$h.log" 2>&1 \
      || { cat "$RAW/merge-$h.log" >&2; exit 1; }
  else
    cp "$RAW/$h"/* "$CORPUS/$h/"
  fi
  printf '%-9s %4d seeds, %s\n' "$h" "$(ls "$CORPUS/$h" | wc -l)" "$(du -sh "$CORPUS/$h" | cut -f1)"
done
