"""Command line of the export half: ``python -m etproof {export,demo,test-bundles}``.

Exit status: 0 when everything asked for was exported, 2 on any error (the C++ ``etproof export``
execs this). Errors print ``error [STAGE]: CAUSE`` and ``remedy: REMEDY`` on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import warnings
from pathlib import Path

from etproof.errors import EtproofError, InvalidArgument

EXIT_OK = 0
EXIT_ERROR = 2


def _quiet() -> None:
    # torch/torchao/executorch print pages of FutureWarning/DeprecationWarning during export.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    import logging

    logging.getLogger("torch").setLevel(logging.ERROR)
    logging.getLogger("torchao").setLevel(logging.ERROR)


def _print_error(e: EtproofError) -> None:
    label = e.stage or e.kind
    print(f"error [{label}]: {e.cause}", file=sys.stderr)
    if e.remedy:
        print(f"remedy: {e.remedy}", file=sys.stderr)


def _resolve_model(ref: str) -> tuple[str, dict]:
    """``efficientnet_lite0``, ``tiny`` or ``MODULE:FUNCTION`` -> (model key, export kwargs)."""
    builtin = {"efficientnet_lite0": "etproof.models.efficientnet_lite0:spec",
               "tiny": "etproof.models.tiny:spec"}
    target = builtin.get(ref, ref)
    if ":" not in target:
        raise InvalidArgument(f"unknown model {ref!r}",
                              f"pass one of {', '.join(builtin)}, MODULE:FUNCTION or "
                              "FILE.py:FUNCTION", stage="export")
    mod_name, func_name = target.rsplit(":", 1)
    try:
        if mod_name.endswith(".py"):
            from importlib import util as importlib_util

            file = Path(mod_name)
            if not file.is_file():
                raise ImportError(f"no such file {file}")
            mspec = importlib_util.spec_from_file_location(file.stem, file)
            module = importlib_util.module_from_spec(mspec)
            sys.modules[file.stem] = module
            mspec.loader.exec_module(module)
        else:
            if str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(mod_name)
        func = getattr(module, func_name)
    except Exception as e:  # noqa: BLE001 - whatever the user's module raises while loading
        raise InvalidArgument(f"cannot load {target}: {type(e).__name__}: {e}",
                              "MODULE must be importable (from the current directory or the "
                              "environment) and define FUNCTION", stage="export") from e
    try:
        spec = func()
    except Exception as e:  # noqa: BLE001
        raise InvalidArgument(f"{target}() failed: {type(e).__name__}: {e}",
                              "FUNCTION must build and return the model dict", stage="export") from e
    if not isinstance(spec, dict):
        raise InvalidArgument(f"{target}() returned {type(spec).__name__}, not a dict",
                              "return {model, example_inputs, input_names, output_names, "
                              "golden_inputs[, preprocessing, labels, layouts, model_name]}",
                              stage="export")
    required = {"model", "example_inputs", "input_names", "output_names", "golden_inputs"}
    optional = {"preprocessing", "labels", "layouts", "model_name", "golden_meta",
                "compute_unit"}
    missing = required - set(spec)
    extra = set(spec) - required - optional
    if missing or extra:
        raise InvalidArgument(
            f"{target}() returned a dict with "
            + (f"missing keys {sorted(missing)}" if missing else f"unknown keys {sorted(extra)}"),
            f"required: {sorted(required)}; optional: {sorted(optional)}", stage="export")
    key = spec.get("model_name") or (ref if ref in builtin else func_name)
    spec.setdefault("model_name", key)
    return key, spec


def _pairs_for(backend: str, recipe: str | None) -> list[tuple[str, str]]:
    from etproof.export import RECIPES, supported_pairs_text

    if backend == "all":
        pairs = [p for p in sorted(RECIPES) if recipe in (None, "all") or p[1] == recipe]
        if not pairs:
            raise InvalidArgument(f"no backend supports recipe {recipe!r}",
                                  f"supported (backend/recipe) pairs: {supported_pairs_text()}",
                                  stage="export")
        return pairs
    if recipe is None:
        raise InvalidArgument("--recipe is required",
                              f"supported (backend/recipe) pairs: {supported_pairs_text()}",
                              stage="export")
    return [(backend, recipe)]


def _try_report(out: Path, results: list[dict]) -> None:
    from etproof.runner import write_report

    try:
        out.mkdir(parents=True, exist_ok=True)
        write_report(out, results, merge=True)
    except OSError as e:
        print(f"warning: could not update {out}/export-report.json: {e}", file=sys.stderr)


def cmd_export(a) -> int:
    from etproof.export import RECIPES, export_model, supported_pairs_text
    from etproof.runner import export_pairs, result_for_error

    model_ref = a.model_pos or a.model
    if not model_ref or (a.model_pos and a.model and a.model_pos != a.model):
        raise InvalidArgument("give the model once: MODEL or --model MODEL",
                              "efficientnet_lite0, tiny, MODULE:FUNCTION or FILE.py:FUNCTION",
                              stage="export")
    pairs = _pairs_for(a.backend, a.recipe)
    out = Path(a.out)
    if a.backend == "all" and a.name:
        raise InvalidArgument("--name names one bundle; --backend all writes several",
                              "drop --name (bundles are named MODEL-BACKEND-RECIPE)",
                              stage="export")
    unsupported = [p for p in pairs if p not in RECIPES]
    if unsupported:  # refused before the model is even built, and said so in the report
        b, r = unsupported[0]
        known = any(k[0] == b for k in RECIPES)
        e = InvalidArgument(f"unsupported {f'recipe {r!r} for backend {b!r}' if known else f'backend {b!r}'}",
                            f"supported (backend/recipe) pairs: {supported_pairs_text()}",
                            stage="export")
        _try_report(out, [result_for_error(b, r, e)])
        raise e
    key, spec = _resolve_model(model_ref)
    if a.backend == "all":
        results = export_pairs(lambda: spec, key, pairs, out, force=True, log=_log)
        _try_report(out, results)
        failed = [r for r in results if r["status"] != "exported"]
        for r in failed:
            print(f"error [{r['stage']}]: {r['backend']}/{r['recipe']}: {r['reason']}",
                  file=sys.stderr)
        return EXIT_ERROR if failed else EXIT_OK
    (backend, recipe), = pairs
    name = a.name or f"{key}-{backend}-{recipe}"
    try:
        path = export_model(name=name, out_dir=out, backend=backend, recipe=recipe, log=_log,
                            **spec)
    except EtproofError as e:
        _try_report(out, [result_for_error(backend, recipe, e)])
        raise
    _try_report(out, [{"backend": backend, "recipe": recipe, "bundle": path.name,
                       "status": "exported"}])
    print(path)
    return EXIT_OK


def cmd_test_bundles(a) -> int:
    from etproof.testbundles import export_test_bundles

    results = export_test_bundles(Path(a.out), force=a.force, log=_log)
    return EXIT_OK if all(r["status"] == "exported" for r in results) else EXIT_ERROR


def cmd_demo(a) -> int:
    from etproof.demo import run_demo

    report = run_demo(Path(a.out), force=a.force, log=_log)
    return EXIT_OK if all(r["status"] == "exported" for r in report["results"]) else EXIT_ERROR


def _log(msg: str) -> None:
    print(msg, flush=True)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors in etproof's format, exit 2
        raise InvalidArgument(message, f"see {self.prog} --help")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m etproof",
                                description="etproof export half: PyTorch -> ExecuTorch bundles")
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="export one model to one bundle per (backend, recipe)")
    e.add_argument("model_pos", nargs="?", metavar="MODEL",
                   help="efficientnet_lite0, tiny, MODULE:FUNCTION or FILE.py:FUNCTION")
    e.add_argument("--model", help="the same as MODEL")
    e.add_argument("--backend", required=True, help="portable, xnnpack, or all")
    e.add_argument("--recipe", help="fp32, int8-dynamic-per-channel (all pairs with --backend all)")
    e.add_argument("--out", required=True, help="output directory (bundles go in OUT/NAME/)")
    e.add_argument("--name", help="bundle name (default MODEL-BACKEND-RECIPE)")
    e.set_defaults(func=cmd_export)
    t = sub.add_parser("test-bundles", help="the tiny bundles the C++ tests use")
    t.add_argument("--out", default="build/test-bundles")
    t.add_argument("--force", action="store_true", help="re-export even when up to date")
    t.set_defaults(func=cmd_test_bundles)
    d = sub.add_parser("demo", help="EfficientNet-Lite0 bundles and the golden photos")
    d.add_argument("--out", default="build/demo")
    d.add_argument("--force", action="store_true", help="re-export even when up to date")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    try:
        a = parser.parse_args(argv)
    except SystemExit as e:  # --help
        return EXIT_OK if e.code in (0, None) else EXIT_ERROR
    except InvalidArgument as e:
        _print_error(e)
        return EXIT_ERROR
    _quiet()
    try:
        return a.func(a)
    except EtproofError as e:
        _print_error(e)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("error [interrupted]: interrupted\nremedy: run the command again", file=sys.stderr)
        return EXIT_ERROR
