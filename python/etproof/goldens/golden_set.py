"""The golden set: every golden model, every (backend, recipe) column, in one bundle directory.

Models: EfficientNet-Lite0 (the demo: real weights, real photos), all-MiniLM-L6-v2 (real
weights, real sentences), MobileNetV3-Small (torchvision's architecture, seeded weights, real
photos + one synthetic image) and one op-family golden per entry of etproof.goldens.ops.OPS.
Columns: the demo's (demo.demo_pairs). Writes ``OUT/bundles/MODEL-BACKEND-RECIPE/``, one
``OUT/bundles/export-report.json`` covering every model and column, ``OUT/bundles/xfail.json``
(the demo's expected failures) and ``OUT/photos/``. EfficientNet-Lite0 is exported by the demo's
own code into OUT; its bundles are copied from ``reuse_from`` (e.g. build/demo) where that
directory holds them up to date. Everything is cached by stamp like the demo: a re-run with
nothing changed exports nothing. ``jobs`` > 1 exports that many models at once, each in its own
process (the export of one model is one Python process on one core).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Callable

from etproof.backends import DATA_DIR
from etproof.demo.demo import (DEMO_XFAIL, QUICK_PAIRS, demo_pairs, photos_digest, run_demo,
                               write_xfail)
from etproof.errors import InvalidArgument
from etproof.goldens import llama, minilm, mobilenet_v3_small, ops
from etproof.demo.photos import golden_photos
from etproof.export.runner import export_pairs, write_report
from etproof.status import EXPORTED

EFFICIENTNET = "efficientnet_lite0"
LLAMA = llama.MODEL_NAME  # etproof.goldens.llama
# The golden set's own expected failures (docs/xfail.md), merged with the demo's into
# OUT/bundles/xfail.json.
GOLDEN_XFAIL = DATA_DIR / "golden-xfail.json"

# (backend, recipe) -> why the golden set leaves it out by default for every model but
# EfficientNet-Lite0 (which keeps the demo's columns); --all-columns includes it. The slowest
# column after Vulkan's, and the same lowering: it costs about 2 of the ~10 minutes of a cold
# export on 2 cores.
LEFT_OUT: dict[tuple[str, str], str] = {
    ("webgpu", "fp32"): "WebGPU's partitioner wraps Vulkan's and the program carries "
                        "VulkanBackend, as vulkan/fp32's does; neither runs here. EfficientNet-"
                        "Lite0 keeps the column",
    # Core ML's quantizer takes about 50 s to prepare even the tiny model (2 cores, coremltools
    # 9.0), over 20 minutes for the whole set, for columns that do not run here
    ("coreml", "int8-static-per-channel"): "Core ML's quantizer takes about 50 s a model to "
                                           "prepare; EfficientNet-Lite0 keeps the column",
    ("coreml", "int8-weight-only"): "Core ML's quantizer takes about 50 s a model to prepare; "
                                    "EfficientNet-Lite0 keeps the column",
}


# The quick golden set (`golden-set --quick`, what ./setup.sh exports unless --full): these models
# on the demo's QUICK_PAIRS columns. Left to the full set: all-MiniLM-L6-v2 (fixed and dynamic
# sequence) and the Llama, the slowest exports (MiniLM's int8-static and 8da4w columns 200 to 600 s
# each on 2 AMD EPYC cores, 2026-12-05); the test bundles keep a Llama of their own.
QUICK_MODELS = ("efficientnet_lite0", "mobilenet_v3_small", *(op.name for op in ops.OPS))


def models(photos) -> list[tuple[str, Callable[[], dict], tuple]]:
    """(model key, spec factory, stamp parts) of every golden model but EfficientNet-Lite0."""
    out = [
        (minilm.MODEL_NAME, minilm.spec,
         (photos_digest([], (minilm.DIST, "transformers", "tokenizers", "safetensors")),)),
        (minilm.DYNAMIC_MODEL_NAME, minilm.dynamic_spec,
         (photos_digest([], (minilm.DIST, "transformers", "tokenizers", "safetensors")),)),
        (mobilenet_v3_small.MODEL_NAME, lambda: mobilenet_v3_small.spec(photos),
         (photos_digest(photos, ("pillow", "scikit-image", "scikit-learn")),)),
    ]
    for op in ops.OPS:
        out.append((op.name, (lambda op=op: ops.spec(op)), ()))
    # a language model: ExecuTorch's example Llama with its KV cache, sequence cases (a prompt and
    # teacher-forced decode steps); weights seeded, so no stamp part beyond the export's own
    out.append((LLAMA, llama.spec, ()))
    return out


def model_keys() -> list[str]:
    """Every golden model's key, EfficientNet-Lite0 first."""
    return ([EFFICIENTNET, minilm.MODEL_NAME, minilm.DYNAMIC_MODEL_NAME,
             mobilenet_v3_small.MODEL_NAME]
            + [op.name for op in ops.OPS] + [LLAMA])


def run_golden_set(out: Path, force: bool = False, log=print, all_columns: bool = False,
                   reuse_from: Path | None = None, only=None, pairs=None, jobs: int = 1,
                   quick: bool = False) -> dict:
    """Exports the golden set into OUT/bundles; returns {"results": [...], "seconds": float}.

    only: model keys to export (default: all); pairs: columns (default: the demo's; EfficientNet-
    Lite0 always gets the demo's). jobs: models exported at once, each in a process of its own
    (spawned; torch's intra-op threads split the CPUs between them); the results and the report
    are in model_keys() order whatever the order the models finish in, and each model's log lines
    come together when it finishes. quick: QUICK_MODELS (within ``only``) on QUICK_PAIRS (within
    ``pairs``), EfficientNet-Lite0 on the quick demo's columns. Raises InvalidArgument for an
    unknown model key or jobs < 1.
    """
    t0 = time.monotonic()
    out = Path(out)
    bundles = out / "bundles"
    keys = model_keys()
    unknown = [k for k in (only or []) if k not in keys]
    if unknown:
        raise InvalidArgument(f"unknown golden model(s) {unknown}", f"golden models: {keys}")
    if jobs < 1:
        raise InvalidArgument(f"--jobs {jobs}: at least one export process is needed",
                              "pass --jobs 1 or more")
    want = [k for k in keys if k in set(only or keys) and (not quick or k in QUICK_MODELS)]
    cols = list(pairs) if pairs is not None else [
        p for p in demo_pairs(all_columns) if all_columns or p not in LEFT_OUT]
    if quick:
        cols = [p for p in cols if p in QUICK_PAIRS]
    reuse = Path(reuse_from) / "bundles" if reuse_from is not None else None
    task = dict(out=out, cols=cols, force=force, all_columns=all_columns, reuse=reuse, quick=quick)
    by_key: dict[str, list[dict]] = {}
    if jobs == 1 or len(want) == 1:
        for key in want:
            by_key[key] = _export_model(key, log=log, **task)
    else:
        threads = max(1, (os.cpu_count() or 1) // jobs)
        with ProcessPoolExecutor(max_workers=min(jobs, len(want)), mp_context=get_context("spawn"),
                                 initializer=_worker_start, initargs=(threads,)) as pool:
            futures = {pool.submit(_model_in_worker, key, task): key for key in want}
            for f in as_completed(futures):
                results, lines = f.result()
                for line in lines:
                    log(line)
                by_key[futures[f]] = results
    results = [r for key in want for r in by_key[key]]
    bundles.mkdir(parents=True, exist_ok=True)  # nothing exported (every model filtered out)
    write_report(bundles, results)
    # The directory's expected failures: the demo's (EfficientNet-Lite0) and the golden set's, of
    # the models it holds (exported now or before: a model keys no "-", a bundle MODEL-BACKEND-…).
    present = {r.get("model") for r in results} | {
        p.name.split("-", 1)[0] for p in bundles.iterdir() if p.is_dir()}
    write_xfail(bundles, (DEMO_XFAIL, GOLDEN_XFAIL), models=present)
    seconds = time.monotonic() - t0
    summary(results, log)
    if quick:
        log(f"quick golden set: without --quick also {', '.join(k for k in keys if k not in want)}"
            " and every column the demo exports")
    elif pairs is None and not all_columns:
        for (b, r), why in sorted(LEFT_OUT.items()):
            log(f"{b}/{r}: left out of the golden set but for {EFFICIENTNET} ({why}); "
                "golden-set --all-columns includes it")
    log(f"golden set in {bundles}: {len(want)} models × {len(cols)} columns "
        f"({seconds:.1f} s, {jobs} export process{'es' if jobs > 1 else ''})")
    return {"results": results, "seconds": seconds}


def _export_model(key: str, out: Path, cols, force: bool, all_columns: bool, reuse: Path | None,
                  log, quick: bool = False) -> list[dict]:
    """One golden model's columns into OUT/bundles (EfficientNet-Lite0: the demo's own export,
    its bundles copied from ``reuse`` where up to date there); its report results."""
    if key == EFFICIENTNET:  # the demo's own export: always the demo's columns
        return run_demo(out, force=force, log=log, all_columns=all_columns,
                        reuse_from=reuse, quick=quick)["results"]
    factory, parts = {k: (f, p) for k, f, p in models(golden_photos())}[key]
    return export_pairs(factory, key, cols, out / "bundles", stamp_parts=parts, force=force,
                        log=log, log_errors=False)


def _worker_start(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _model_in_worker(key: str, task: dict) -> tuple[list[dict], list[str]]:
    """_export_model in a worker process: (results, its log lines)."""
    lines: list[str] = []
    return _export_model(key, log=lines.append, **task), lines


def summary(results: list[dict], log=print) -> None:
    """Per model: how many columns exported; each column that did not, with stage and reason."""
    by_model: dict[str, list[dict]] = {}
    for r in results:
        by_model.setdefault(r.get("model", "?"), []).append(r)
    for model, rs in by_model.items():
        done = sum(r["status"] == EXPORTED for r in rs)
        log(f"{model}: {done}/{len(rs)} columns exported")
        for r in rs:
            if r["status"] != EXPORTED:
                log(f"  {r['backend']}/{r['recipe']}: {r['status']} [{r.get('stage', '?')}]: "
                    f"{r.get('reason', '')}")
