#!/usr/bin/env python3
"""The runtime half's layers, held to the tree (docs/layout.md; CTest layers.*).

The layer order is CMakeLists.txt's ``set(ETPROOF_LAYERS ...)``, bottom first. A file in a layer's
folder (cpp/src/LAYER/, cpp/include/etproof/LAYER/) may include a public header of its own or a lower
layer (``etproof/L/NAME.h``) and a private header of its own or a lower layer (``L/NAME.h``), never
one above it. Every source and public header lies in exactly one layer's folder (but for the
umbrella etproof/etproof.h and etproof/gtest.h, which sit above all), and the umbrella includes
every public header. docs/layout.md names every folder that holds tracked files (as `path/`, or
an ancestor as `path/**`) and nothing that is not there.

    check_layers.py ROOT             exit 0, or 1 listing every violation (file:line, what, why)
    check_layers.py --self-test      builds a small tree with an upward include, a file outside
                                     any layer and an undocumented folder; exit 0 iff each is caught
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
TOP_HEADERS = {"etproof.h", "gtest.h"}


def layers_of(root: Path) -> list[str]:
    m = re.search(r"set\(ETPROOF_LAYERS ([a-z_ ]+)\)", (root / "CMakeLists.txt").read_text())
    if not m:
        raise SystemExit("CMakeLists.txt: no set(ETPROOF_LAYERS ...)")
    return m.group(1).split()


def include_problems(root: Path, layers: list[str]) -> list[str]:
    rank = {name: i for i, name in enumerate(layers)}
    problems = []
    src, inc = root / "cpp" / "src", root / "cpp" / "include" / "etproof"
    for base in (src, inc):
        for f in sorted(p for p in base.iterdir() if p.is_file()):
            if not (base == inc and f.name in TOP_HEADERS):
                problems.append(f"{f.relative_to(root)}: in no layer's folder (move it into one of "
                                f"{', '.join(layers)})")
        for d in sorted(p for p in base.iterdir() if p.is_dir()):
            if d.name not in rank:
                problems.append(f"{d.relative_to(root)}/: not a layer of CMakeLists.txt's ETPROOF_LAYERS")
    for base in (src, inc):
        for layer in layers:
            for f in sorted((base / layer).glob("*")) if (base / layer).is_dir() else []:
                for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    parts = m.group(1).split("/")
                    target = None
                    if len(parts) == 3 and parts[0] == "etproof" and parts[1] in rank:
                        target = parts[1]
                    elif len(parts) == 2 and parts[0] in rank:
                        target = parts[0]
                    if target is not None and rank[target] > rank[layer]:
                        problems.append(f"{f.relative_to(root)}:{n}: includes {m.group(1)}: layer "
                                        f"'{layer}' may include only {', '.join(layers[:rank[layer] + 1])}")
    umbrella = inc / "etproof.h"
    if umbrella.is_file():
        text = umbrella.read_text(encoding="utf-8")
        for layer in layers:
            for h in sorted((inc / layer).glob("*.h")) if (inc / layer).is_dir() else []:
                if f'#include "etproof/{layer}/{h.name}"' not in text:
                    problems.append(f"cpp/include/etproof/etproof.h: does not include etproof/{layer}/{h.name}")
    return problems


def tracked_folders(root: Path) -> set[str]:
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard"],
                             capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
    return {str(Path(f).parent) for f in out if Path(f).parent != Path(".")
            and (root / f).exists()}


def layout_problems(root: Path) -> list[str]:
    layout = root / "docs" / "layout.md"
    if not layout.is_file():
        return ["docs/layout.md: missing"]
    named = set()
    for cell in re.findall(r"^\|\s*([^|]+)\|", layout.read_text(encoding="utf-8"), re.M):
        named |= set(re.findall(r"`([^`]+/(?:\*\*)?)`", cell))
    problems = []
    for p in sorted(named):
        path = p[:-3] if p.endswith("/**") else p.rstrip("/")
        if not (root / path).is_dir():
            problems.append(f"docs/layout.md: names `{p}`, which is not a folder of the tree")
    subtrees = [p[:-3] for p in named if p.endswith("/**")]
    exact = {p.rstrip("/") for p in named if not p.endswith("/**")}
    for folder in sorted(tracked_folders(root)):
        if folder in exact or any(folder == s or folder.startswith(s + "/") for s in subtrees):
            continue
        problems.append(f"docs/layout.md: does not name the folder `{folder}/` (add a row: what it "
                        f"holds, what it may touch)")
    return problems


def check(root: Path) -> list[str]:
    return include_problems(root, layers_of(root)) + layout_problems(root)


def self_test() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "CMakeLists.txt").write_text("set(ETPROOF_LAYERS core gate render)\n")
        for d in ("cpp/src/core", "cpp/src/gate", "cpp/include/etproof/core", "cpp/include/etproof/gate",
                  "docs", "extra"):
            (root / d).mkdir(parents=True)
        (root / "cpp/include/etproof/core/a.h").write_text('#pragma once\n')
        (root / "cpp/include/etproof/gate/b.h").write_text('#include "etproof/core/a.h"\n')
        (root / "cpp/include/etproof/etproof.h").write_text(
            '#include "etproof/core/a.h"\n#include "etproof/gate/b.h"\n')
        (root / "cpp/src/gate/b.cpp").write_text('#include "etproof/gate/b.h"\n#include "core/x.h"\n')
        (root / "cpp/src/core/x.h").write_text("\n")
        (root / "extra/f.txt").write_text("\n")
        rows = ["cpp/src/core/", "cpp/src/gate/", "cpp/include/etproof/**", "docs/"]
        (root / "docs/layout.md").write_text("| where |\n| --- |\n" + "".join(f"| `{r}` |\n" for r in rows))
        clean_extra = check(root)
        ok = clean_extra == ["docs/layout.md: does not name the folder `extra/` (add a row: what it holds, "
                             "what it may touch)"]
        (root / "docs/layout.md").write_text((root / "docs/layout.md").read_text() + "| `extra/` |\n")
        ok = ok and check(root) == []
        (root / "cpp/src/core/a.cpp").write_text('#include "etproof/gate/b.h"\n')  # points up
        (root / "cpp/src/loose.cpp").write_text("\n")                             # in no layer
        found = check(root)
        ok = ok and any("cpp/src/core/a.cpp:1: includes etproof/gate/b.h" in p for p in found)
        ok = ok and any("cpp/src/loose.cpp: in no layer" in p for p in found)
        ok = ok and any("does not name the folder `cpp/src/`" in p for p in found) and len(found) == 3
        print("self-test:", "ok" if ok else f"FAILED: {clean_extra} / {found}")
        return 0 if ok else 1


def main(argv: list[str]) -> int:
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(Path(argv[1]).resolve())
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s)" if problems else "layers and docs/layout.md: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
