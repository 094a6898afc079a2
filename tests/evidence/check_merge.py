#!/usr/bin/env python3
"""CTest driver for evidence from two machines merged into one coverage page (CMakeLists.txt, test
evidence.merge_two_machines; issue 14 §3). Python 3 stdlib only.

  check_merge.py ETPROOF ETPROOF_NODELEGATE BUNDLES SCRATCH

Two runtime configurations of this host, recorded as two machines (ETPROOF_MACHINE_NAME):
  - FULL: ETPROOF (XNNPACK and the other delegates linked) runs `matrix BUNDLES` into SCRATCH/full.jsonl;
  - BARE: ETPROOF_NODELEGATE (no delegate linked) runs `matrix BUNDLES --in-process` into
    SCRATCH/bare.jsonl.
Then `etproof coverage --ledger full --ledger bare` renders the page, and it must:
  - list both machines in its Machines table, each by its name;
  - give every backend one summary row per recipe and machine that has evidence for it, each naming its
    machine: XNNPACK **works** on FULL and, on BARE, says not-linked — the FULL claim does not hide
    the BARE refusal, nor the other way round;
  - give XNNPACK's evidence table a row of BARE's with its not-linked reason, beside FULL's agreed;
  - render the same page from the two ledgers concatenated (`cat full bare bare`: records merge by
    concatenation, duplicates dropping by id).
Each ledger's XNNPACK records are read first, so the page is checked against what each machine
recorded, not against counts written here.

Exit 0 when all hold, 1 when not, 77 (CTest SKIP_RETURN_CODE), with the reason, when a binary or
the test bundles are missing.
"""
import json
import os
import shutil
import subprocess
import sys

SKIP = 77
FULL, BARE = "ctest-full", "ctest-no-delegate"


def fail(msg: str) -> None:
    print(f"FAIL: {msg}")
    sys.exit(1)


def run(cmd, name: str, ok=(0,)) -> subprocess.CompletedProcess:
    env = dict(os.environ, ETPROOF_MACHINE_NAME=name) if name else dict(os.environ)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode not in ok:
        fail(f"{' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def records(ledger: str) -> list:
    with open(ledger, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def rows(page: str, first_cell: str) -> list:
    """Table rows of ``page`` whose first cell starts with ``first_cell``, as lists of cells."""
    out = []
    for line in page.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if cells[0].startswith(first_cell):
                out.append(cells)
    return out


def main() -> int:
    etproof, bare_bin, bundles, scratch = sys.argv[1:5]
    for b in (etproof, bare_bin):
        if not os.access(b, os.X_OK):
            print(f"skipped: {b} is not built (cmake --build build)")
            return SKIP
    if not os.path.isdir(os.path.join(bundles, "tiny-xnnpack-fp32")):
        print(f"skipped: no test bundles in {bundles} (python -m etproof test-bundles --out {bundles})")
        return SKIP
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    full, bare = os.path.join(scratch, "full.jsonl"), os.path.join(scratch, "bare.jsonl")
    run([etproof, "matrix", bundles, "--ledger", full], FULL)
    # not-linked columns are not failures of the matrix (exit 0); a drift would be (1)
    run([bare_bin, "matrix", bundles, "--in-process", "--ledger", bare], BARE)
    mine = {n: [r for r in records(f) if r.get("backend") == "xnnpack" and r.get("half") == "runtime"]
            for n, f in ((FULL, full), (BARE, bare))}
    if not mine[FULL] or not mine[BARE]:
        fail(f"no XNNPACK runtime record in a ledger: {json.dumps(mine)[:400]}")
    if {r["machine"].get("name") for r in records(full)} != {FULL}:
        fail("the full ledger's records do not all carry machine.name " + FULL)
    full_status = {r["status"] for r in mine[FULL]}
    bare_status = {r["status"] for r in mine[BARE]}
    if "agreed" not in full_status:
        fail(f"the full binary recorded no agreed XNNPACK column: {full_status}")
    if bare_status != {"not-linked"}:
        fail(f"the no-delegate binary recorded {bare_status} for XNNPACK, not not-linked")
    bare_reason = mine[BARE][0].get("reason", "")
    if "XnnpackBackend" not in bare_reason:
        fail(f"the not-linked record names no backend id: {bare_reason!r}")

    page_file = os.path.join(scratch, "coverage.md")
    run([etproof, "coverage", "--ledger", full, "--ledger", bare, "--out", page_file], "")
    page = open(page_file, encoding="utf-8").read()

    machines = rows(page, FULL) + rows(page, BARE)
    names = sorted(c[0].split(" ")[0] for c in machines if len(c) >= 8)  # the Machines table
    if names != sorted([FULL, BARE]):
        fail(f"the Machines table lists {names}, not both machines\n{page[:2000]}")

    # backend | recipe | machine | claim | export half | runtime half
    summary = [c for c in rows(page, "`xnnpack`") if len(c) == 6 and c[1] == "fp32"]
    by_machine = {c[2].split(" ")[0]: c for c in summary}
    if set(by_machine) != {FULL, BARE}:
        fail(f"XNNPACK fp32's summary rows are for {sorted(by_machine)}, not one per machine\n{summary}")
    if "**works**" not in by_machine[FULL][3]:
        fail(f"XNNPACK on {FULL} is not claimed to work: {by_machine[FULL]}")
    if "works" in by_machine[BARE][3] or "not-linked" not in " ".join(by_machine[BARE][3:]):
        fail(f"XNNPACK on {BARE} does not say not-linked (or claims to work): {by_machine[BARE]}")

    if "### `xnnpack`" not in page:
        fail("the page has no XNNPACK evidence section")
    section = page.split("### `xnnpack`", 1)[1].split("\n### ", 1)[0]
    bare_rows = rows(section, BARE)
    if not any("agreed" in " ".join(c) for c in rows(section, FULL)):
        fail(f"XNNPACK's evidence table has no agreed row of {FULL}")
    if not any("not-linked" in " ".join(c) for c in bare_rows):
        fail(f"XNNPACK's evidence table has no not-linked row of {BARE}: {bare_rows}")

    merged = os.path.join(scratch, "merged.jsonl")
    with open(merged, "w", encoding="utf-8") as out:
        for f in (full, bare, bare):
            out.write(open(f, encoding="utf-8").read())
    again = os.path.join(scratch, "coverage-merged.md")
    run([etproof, "coverage", "--ledger", merged, "--out", again], "")
    a = page.replace(f"`{full}`", "L").replace(f"`{bare}`", "L")
    b = open(again, encoding="utf-8").read()
    if a.split("## Machines", 1)[1] != b.split("## Machines", 1)[1]:
        fail("the page from the concatenated ledger differs from the page of the two ledgers")
    print(f"ok: {FULL} {sorted(full_status)}, {BARE} {sorted(bare_status)}; page {page_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
