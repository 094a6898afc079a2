#!/usr/bin/env python3
"""How far each bundle's reference computations are from their float64 truth: the measurement
behind the widening's cap (cpp/include/etproof/gate/references.h, kExplainableRoundoffs; docs/design.md
§5). For every bundle under the directories given (searched recursively), every golden case and
float output with a float64 truth:

  golden    the float32 golden's max|g - t| in unit roundoffs of float32 on the truth's range R
            (the cap: 2^14 = 16384)
  bfloat16  the bfloat16 / float16 emulation's max|e - t| / R, and whether the bound widened by 4x
  float16   it would admit the whole output (row atol_range + 4 x gap/R >= 1: inconclusive)

usage: .venv/bin/python scripts/reference_gaps.py DIR [DIR ...] [--all]
Prints the worst observations of each kind (every output with --all).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

U = {"float32": 2.0 ** -24, "bfloat16": 2.0 ** -8, "float16": 2.0 ** -11}
# The reference-basis rows' atol_range by precision, as the gate reads them (data/bounds.json).
ROW = {r["key"]: r["atol_range"]
       for r in json.loads((Path(__file__).resolve().parents[1] / "data" / "bounds.json").read_text())["rows"]
       if r["axis"] == "precision" and "reference" in r["bases"] and r["key"] in ("bfloat16", "float16")}
MARGIN = 4
CAP = 16384


def main(argv: list[str]) -> int:
    show_all = "--all" in argv
    dirs = [Path(a) for a in argv if not a.startswith("--")]
    rows = []  # (kind, value, where, detail)
    for manifest in sorted(m for d in dirs for m in d.rglob("*.etproof.json")):
        doc = json.loads(manifest.read_text())
        gdir = manifest.parent / f"{doc['name']}.goldens"
        for case in doc.get("goldens", []):
            refs = case.get("references", {})
            truth_files = refs.get("float64")
            if not truth_files:
                continue
            for output, ref in truth_files.items():
                t = np.load(gdir / ref["file"])
                if not np.issubdtype(t.dtype, np.floating):
                    continue
                t = t.astype(np.float64)
                ok = np.isfinite(t)
                r_range = float(np.abs(t[ok]).max()) if ok.any() else 0.0
                if r_range == 0:
                    continue
                where = f"{manifest.parent.name} {case['id']} {output}"
                g = np.load(gdir / case["outputs"][output]).astype(np.float64)
                gap = float(np.abs(g[ok] - t[ok]).max())
                rows.append(("golden", gap / (U["float32"] * r_range), where,
                             f"{gap:.3g} on R {r_range:.4g}"))
                for p in ("bfloat16", "float16"):
                    if p not in refs or output not in refs[p]:
                        continue
                    e = np.load(gdir / refs[p][output]["file"]).astype(np.float64)
                    egap = float(np.abs(e[ok] - t[ok]).max()) / r_range
                    nobound = ROW[p] + MARGIN * egap >= 1
                    rows.append((p, egap, where, "NO BOUND (inconclusive)" if nobound else
                                 f"widened atol {ROW[p] + MARGIN * egap:.3g} of R"))
    if not rows:
        print("no bundle with a float64 truth under", ", ".join(map(str, dirs)))
        return 1
    for kind, unit in (("golden", "unit roundoffs of float32 on R (cap 16384)"),
                       ("bfloat16", "of R"), ("float16", "of R")):
        mine = sorted((r for r in rows if r[0] == kind), key=lambda r: -r[1])
        if not mine:
            continue
        nob = sum("NO BOUND" in r[3] for r in mine)
        print(f"{kind}: {len(mine)} outputs; worst {mine[0][1]:.4g} {unit}"
              + (f"; {nob} with no bound" if kind != "golden" else
                 f"; {sum(r[1] > CAP for r in mine)} over the cap"))
        for r in (mine if show_all else mine[:5]):
            print(f"  {r[1]:10.4g}  {r[2]}  ({r[3]})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
