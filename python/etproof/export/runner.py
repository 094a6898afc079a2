"""Export one model for several (backend, recipe) pairs; one failure never stops the others."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

from etproof import schema
from etproof.export import cache
from etproof.errors import (EtproofError, InvalidArgument, NothingToQuantize, error_detail,
                            summary_line)
from etproof.export.pipeline import export_model
from etproof.manifest import canonical_dumps
from etproof.export.taps import twin_name
from etproof.status import EXPORT_FAILED, EXPORT_REFUSED, EXPORTED

REPORT = "export-report.json"


def exported_result(backend: str, recipe: str, bundle: str, model: str) -> dict:
    """The export-report entry of an exported column (etproof.status: the entry's fields)."""
    return {"backend": backend, "recipe": recipe, "bundle": bundle, "model": model,
            "status": EXPORTED}


def result_for_error(backend: str, recipe: str, e: EtproofError,
                     model: str | None = None) -> dict:
    """The export-report entry of a failed export: refused (arguments) or failed (a stage).

    model: the model key (NAME in NAME-BACKEND-RECIPE), where known; an xfail record's export
    half matches entries by it (docs/xfail.md). Absent when the model was never loaded.
    "reason" is one line (the matrix shows it); "error" keeps the whole error of the library that
    failed (errors.error_detail: type, message, operators, where, node), where one did, with the
    fields schema/export-report.schema.json defines: ExecuTorch's log lines kept with the error
    (``log``) are not among them; the cause carries those that explain it (lower.run_failed).
    """
    # Refused: a usage error or missing prerequisite (InvalidArgument), or a quantized recipe
    # that quantizes nothing here (NothingToQuantize); anything else is a failure.
    status = (EXPORT_REFUSED if isinstance(e, (InvalidArgument, NothingToQuantize))
              else EXPORT_FAILED)
    r = {"backend": backend, "recipe": recipe, "status": status,
         "stage": e.stage or "export", "reason": str(e)}
    if e.detail:
        r["error"] = {k: v for k, v in e.detail.items() if k != "log"}
    if model:
        r["model"] = model
    return r


def _same_entry(a: dict, b: dict) -> bool:
    if (a.get("backend"), a.get("recipe")) != (b.get("backend"), b.get("recipe")):
        return False
    return a.get("model") is None or b.get("model") is None or a["model"] == b["model"]


def write_report(out: Path, results: list[dict], merge: bool = False) -> Path:
    """Writes ``OUT/export-report.json`` = {"results": [...]} (canonical JSON), each entry
    following schema/export-report.schema.json (ValueError otherwise; the words: etproof.status).

    merge: keep entries already in the report; an entry for the same (model, backend, recipe) is
    replaced in place. A report holds one entry per (model, backend, recipe): several models may
    share a directory (the golden set); an entry without a model (refused before the model was
    loaded) stands for every model of its pair.
    """
    path = Path(out) / REPORT
    merged: list[dict] = []
    if merge:
        try:
            old = json.loads(path.read_text(encoding="utf-8"))["results"]
            merged = [r for r in old if isinstance(r, dict) and "backend" in r]
        except (OSError, ValueError, KeyError, TypeError):
            merged = []
        # An entry an older etproof wrote that schema/export-report.schema.json refuses is dropped.
        merged = [r for r in merged if not schema.validate({"results": [r]}, "export-report")]
    problems = schema.validate({"results": results}, "export-report")
    if problems:  # the writer's own entries: a bug here, never the user's
        raise ValueError(f"export-report entries break schema/export-report.schema.json: "
                         f"{schema.problems_text(problems)}")
    for r in results:
        for i, old in enumerate(merged):
            if _same_entry(old, r):
                merged[i] = r
                break
        else:
            merged.append(r)
    tmp = path.with_name(f".{REPORT}.tmp")
    tmp.write_text(canonical_dumps({"results": merged}), encoding="utf-8")
    os.replace(tmp, path)
    return path


def export_pairs(spec_factory: Callable[[], dict], model_key: str, pairs, out: Path,
                 stamp_parts=(), force: bool = False, log=print,
                 log_errors: bool = True, reuse_from: Path | None = None,
                 taps: bool | int | None = None, taps_from: str | None = None,
                 step_log=None) -> list[dict]:
    """Exports ``model_key-backend-recipe`` bundles into ``out``; returns report results.

    spec_factory() returns export_model's keyword arguments except name/out_dir/backend/recipe;
    it is called only when some bundle needs exporting. A column that fails (any exception but
    an interrupt) is recorded as such and the next one still runs; bundles already written stay.
    log_errors=False: a failed column logs its status and stage only, for callers that print the
    reasons themselves (once each).
    reuse_from: another bundle directory (e.g. the demo's); a bundle up to date there (same stamp,
    intact) is copied instead of exported again.
    taps: export_model's (True or N: each bundle also gets its tapped twin NAME/NAME.taps). The
    stamp records it, so a bundle exported without taps is exported again when they are asked
    for (and the other way round); a bundle asked with taps is up to date only with its twin
    intact. taps_from: export_model's (the MODEL the twin records for ``attribute --bisect``).
    step_log: where export_model's per-step progress goes (default: ``log``); ``log`` keeps one
    line per bundle (up to date, exported, refused or failed).
    """
    out.mkdir(parents=True, exist_ok=True)
    stamps = cache.load_stamps(out)
    results = []
    spec = None
    for backend, recipe in pairs:
        name = f"{model_key}-{backend}-{recipe}"
        stamp = cache.make_stamp(name, *stamp_parts, *([f"taps={taps}"] if taps else []),
                                 *([f"taps_from={taps_from}"] if taps and taps_from else []))
        prev = stamps.get(name)
        if not force and prev and prev.get("stamp") == stamp and (
                prev["result"]["status"] != EXPORTED or (
                    cache.bundle_intact(out / name) and (
                        not taps or cache.bundle_intact(out / name / twin_name(name))))):
            log(f"{name}: up to date ({prev['result']['status']})")
            results.append(prev["result"])
            continue
        adopted = (cache.adopt(Path(reuse_from), out, name, stamp)
                   if reuse_from is not None and not force and Path(reuse_from) != out else None)
        if (adopted is not None and taps and adopted["status"] == EXPORTED
                and not cache.bundle_intact(out / name / twin_name(name))):
            adopted = None  # copied without its twin: exported again below
        if adopted is not None:
            log(f"{name}: up to date in {reuse_from}, copied ({adopted['status']})")
            results.append(adopted)
            cache.record_stamp(out, name, {"stamp": stamp, "result": adopted})
            continue
        t0 = time.monotonic()
        try:
            if spec is None:
                spec = spec_factory()
            extra = {"taps": taps} if taps else {}
            if taps and taps_from:
                extra["taps_from"] = taps_from
            path = export_model(name=name, out_dir=out, backend=backend, recipe=recipe,
                                log=step_log or log, **extra, **spec)
            result = exported_result(backend, recipe, path.name, model_key)
            log(f"{name}: exported in {time.monotonic() - t0:.1f} s")
        except EtproofError as e:
            result = result_for_error(backend, recipe, e, model_key)
            log(f"{name}: {result['status']} [{result['stage']}]"
                + (f": {e}" if log_errors else ""))
        except Exception as e:  # noqa: BLE001 - one column's failure never stops the others
            result = {"backend": backend, "recipe": recipe, "model": model_key,
                      "status": EXPORT_FAILED, "stage": "export", "reason": summary_line(e),
                      "error": error_detail(e)}
            log(f"{name}: {EXPORT_FAILED} [export]" + (f": {result['reason']}" if log_errors
                                                       else ""))
        results.append(result)
        cache.record_stamp(out, name, {"stamp": stamp, "result": result})
    return results
