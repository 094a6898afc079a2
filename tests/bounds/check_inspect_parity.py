#!/usr/bin/env python3
"""The bound `inspect` prints is the bound `parity` applies (issue 30): for every bundle under
the directories given, `etproof inspect --json` and `etproof parity --json` name the same rule,
the same `judged:` line, and, per golden case and float output, the same resolved atol, rtol,
cosine floor and SQNR floor (widened against truth or not) and the same inconclusive verdict.

usage: check_inspect_parity.py ETPROOF DIR [DIR ...]
Exit 0: every bundle compared agrees; 1: a difference (each printed); 77: no bundle found (the
directories were not exported: skipped by name). Bundles parity cannot run here (not-linked,
unavailable: parity refuses them before judging) are counted, not compared.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path


def number(v):
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[v]
    return v


def same(a, b) -> bool:
    a, b = number(a), number(b)
    if a is None or b is None:
        return a is b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


def run(cmd: list[str]) -> dict:
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"_error": f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[:300]}"}


def main() -> int:
    etproof, dirs = sys.argv[1], [Path(d) for d in sys.argv[2:]]
    bundles = sorted({m.parent for d in dirs if d.is_dir() for m in d.glob("*/*.etproof.json")})
    if not bundles:
        print(f"skipped: no bundles under {', '.join(map(str, dirs))}")
        return 77
    problems, compared, outputs, not_runnable = [], 0, 0, 0
    for b in bundles:
        ins = run([etproof, "inspect", "--json", str(b)])
        par = run([etproof, "parity", "--json", "--no-ledger", str(b)])
        if "_error" in ins:
            problems.append(ins["_error"])
            continue
        if "_error" in par and ("[backend-not-linked]" in par["_error"] or
                                "[backend-unavailable]" in par["_error"]):
            not_runnable += 1  # parity refuses it here before judging: nothing applied to compare
            continue
        if "_error" in par or "cases" not in par:
            problems.append(par.get("_error", f"{b.name}: parity --json has no cases"))
            continue
        compared += 1
        if (ins["bound"] or {}).get("rule") != par["bound"].get("rule") and not par.get("no_bound"):
            problems.append(f"{b.name}: inspect's rule {ins['bound']} != parity's {par['bound']}")
        if ins.get("judged", "") != par.get("judgement", ""):
            problems.append(f"{b.name}: inspect judged {ins.get('judged')!r}, parity "
                            f"{par.get('judgement')!r}")
        if par.get("refused"):
            continue
        applied = {(a["case"], a["output"]): a for a in ins.get("applied", [])}
        for case in par["cases"]:
            for out in case.get("outputs", []):
                if out.get("exact"):
                    continue
                a = applied.get((case["case"], out["output"]))
                if a is None:
                    problems.append(f"{b.name} {case['case']} {out['output']}: not in inspect")
                    continue
                outputs += 1
                for key in ("atol", "rtol", "min_cosine", "min_sqnr_db"):
                    if not same(a[key], out[key]):
                        problems.append(f"{b.name} {case['case']} {out['output']}: {key} "
                                        f"inspect {a[key]} parity {out[key]}")
                if bool(a.get("inconclusive")) != bool(out.get("inconclusive")):
                    problems.append(f"{b.name} {case['case']} {out['output']}: inconclusive "
                                    f"inspect {a.get('inconclusive')!r} parity "
                                    f"{out.get('inconclusive')!r}")
    for p in problems:
        print("DIFFERS:", p)
    print(f"{compared} bundles, {outputs} outputs compared ({not_runnable} not runnable here): "
          f"{'the same bound' if not problems else f'{len(problems)} differences'}")
    return 1 if problems or compared == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
