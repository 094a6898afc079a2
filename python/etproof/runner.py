"""Export one model for several (backend, recipe) pairs; one failure never stops the others."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from etproof import cache
from etproof.errors import EtproofError, ExportError, InvalidArgument


def export_pairs(spec_factory: Callable[[], dict], model_key: str, pairs, out: Path,
                 stamp_parts=(), force: bool = False, log=print) -> list[dict]:
    """Exports ``model_key-backend-recipe`` bundles into ``out``; returns report results.

    spec_factory() returns export_model's keyword arguments except name/out_dir/backend/recipe;
    it is called only when some bundle needs exporting.
    """
    from etproof.export import export_model

    out.mkdir(parents=True, exist_ok=True)
    stamps = cache.load_stamps(out)
    results = []
    spec = None
    for backend, recipe in pairs:
        name = f"{model_key}-{backend}-{recipe}"
        stamp = cache.make_stamp(name, *stamp_parts)
        prev = stamps.get(name)
        if not force and prev and prev.get("stamp") == stamp and (
                prev["result"]["status"] != "exported" or cache.bundle_intact(out / name)):
            log(f"{name}: up to date ({prev['result']['status']})")
            results.append(prev["result"])
            continue
        t0 = time.monotonic()
        try:
            if spec is None:
                spec = spec_factory()
            path = export_model(name=name, out_dir=out, backend=backend, recipe=recipe,
                                log=log, **spec)
            result = {"backend": backend, "recipe": recipe, "bundle": path.name,
                      "status": "exported"}
            log(f"{name}: exported in {time.monotonic() - t0:.1f} s")
        except InvalidArgument as e:
            result = {"backend": backend, "recipe": recipe, "status": "export-refused",
                      "stage": e.stage or "export", "reason": str(e)}
            log(f"{name}: export refused: {e}")
        except ExportError as e:
            result = {"backend": backend, "recipe": recipe, "status": "export-failed",
                      "stage": e.stage, "reason": str(e)}
            log(f"{name}: export failed [{e.stage}]: {e}")
        except EtproofError as e:
            result = {"backend": backend, "recipe": recipe, "status": "export-failed",
                      "stage": e.stage or "export", "reason": str(e)}
            log(f"{name}: export failed: {e}")
        results.append(result)
        stamps[name] = {"stamp": stamp, "result": result}
        cache.save_stamps(out, stamps)
    return results
