"""Command line of the export half: ``python -m etproof {export,probe,demo,golden-set,test-bundles}``.

Exit status: 0 when everything asked for was exported, 2 on any error (the C++ ``etproof export``
execs this). Errors print ``error [STAGE]: CAUSE``, the library's whole error where one failed,
and ``remedy: REMEDY`` on stderr. During ``export``, ``demo``, ``golden-set`` and
``test-bundles`` the libraries' own output (ExecuTorch's and the backends' logs, progress bars)
goes to OUT/export-log.txt unless --verbose (etproof.cli.quiet).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import logging
import sys
import textwrap
import time
import traceback
import warnings
from pathlib import Path

from etproof import backends
from etproof.cli import quiet
from etproof.probe import probe
from etproof.status import EXPORT_REFUSED, EXPORTED, NOT_FAILED
from etproof.errors import EtproofError, InvalidArgument, command_name
from etproof.contract.recipes import (
    EXECUTORCH_BACKENDS,
    RECIPES,
    supported_backends,
    supported_pairs_text,
    supported_recipes,
)

# The exporter (etproof.export.pipeline, userspec, runner, demo, golden, testbundles, models) is imported by
# the commands that export, not here: `python -m etproof probe` answering from its cache, and the
# C++ `etproof backends` that runs it, would otherwise spend ~80 ms importing it and numpy
# (the cached probe answers in under 0.1 s: docs/speed.md).

EXIT_OK = 0
EXIT_FAILED = 1  # the command ran and its answer is a failure (export: a pair failed)
EXIT_ERROR = 2


def _quiet() -> None:
    # torch/torchao/executorch print pages of FutureWarning/DeprecationWarning during export.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    logging.getLogger("torch").setLevel(logging.ERROR)
    logging.getLogger("torchao").setLevel(logging.ERROR)


def _detail_lines(detail: dict | None) -> list[str]:
    """The whole error of the library that failed (errors.error_detail), indented under the
    ``error`` line: its type and where it was raised, then every line of its message."""
    if not detail:
        return []
    message = detail.get("message", "")
    head = f"  {detail['type']}"
    if detail.get("where"):
        head += f" raised at {detail['where']}"
    if message.strip():
        lines = [head + ":"] + [f"    {ln}".rstrip() for ln in message.splitlines()]
    else:  # no message: the line that raised says what was checked
        lines = [head + (f": {detail['source']}" if detail.get("source") else "")
                 + " (no message)"]
    if detail.get("node"):
        lines.append(f"  while handling node {detail['node']}")
    if detail.get("log"):
        lines.append("  ExecuTorch's log about it:")
        lines += [f"    {ln}" for ln in detail["log"]]
    return lines


def _print_error(e: EtproofError) -> None:
    label = e.stage or e.kind
    err = quiet.err()
    print(f"error [{label}]: {e.cause}", file=err)
    for line in _detail_lines(e.detail):
        print(line, file=err)
    if e.remedy:
        print(f"remedy: {e.remedy}", file=err)


def _usage(cause: str, remedy: str) -> InvalidArgument:
    """A usage error: exit 2, recorded nowhere (no stage: it is not an export column)."""
    return InvalidArgument(cause, remedy)


def _unknown(kind: str, value: str, supported: list[str]) -> InvalidArgument:
    close = _closest(value, supported)
    return _usage(f"unknown {kind} {value!r}; supported: {', '.join(supported)}",
                  _hint(close, supported_pairs_text()))


def _closest(value: str, choices) -> list[str]:
    """The one closest name (difflib), or the one the value abbreviates ("int8")."""
    choices = list(choices)
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.5)
    prefixed = [c for c in choices if value and c.startswith(value)]
    return close or prefixed[:1]


def _hint(close: list[str], pairs: str) -> str:
    return (f"did you mean {close[0]!r}? (backend/recipe pairs: {pairs})" if close
            else f"backend/recipe pairs: {pairs}")


def _pairs_for(backend: str, recipe: str | None) -> list[tuple[str, str]]:
    """The (backend, recipe) columns asked for: one name each, or comma lists (every supported
    pair of the backends and recipes listed, in the table's order; "all" may stand in either
    list). Unknown names are usage errors, as is a list whose pairs include none supported."""
    backends = [b.strip() for b in backend.split(",")]
    recipes = [r.strip() for r in recipe.split(",")] if recipe is not None else [None]
    if len(backends) == 1 and len(recipes) == 1:
        return _pairs_for_one(backends[0], recipes[0])
    for b in backends:  # each name checked alone: unknown, or not exported by etproof, refused
        _pairs_for_one(b, "all")
    for r in recipes:
        if r is not None:
            _pairs_for_one("all", r)
    asked = {p for b in backends for r in recipes
             for p in _pairs_for_one(b, "all" if r is None else r) if p in RECIPES}
    if not asked:
        raise _usage(f"no backend/recipe pair of --backend {backend} and --recipe {recipe} is "
                     "exported by etproof", f"backend/recipe pairs: {supported_pairs_text()}")
    return [p for p in sorted(RECIPES) if p in asked]


def _pairs_for_one(backend: str, recipe: str | None) -> list[tuple[str, str]]:
    """The (backend, recipe) columns of one backend name and one recipe name; unknown names are
    usage errors.

    A backend ExecuTorch has but etproof does not export (EXECUTORCH_BACKENDS) with a known recipe
    is returned as asked: the caller refuses it and records the refusal in the report.
    """
    ours = supported_backends()
    if backend != "all" and backend not in ours and backend not in EXECUTORCH_BACKENDS:
        close = _closest(backend, ours + ["all"]) or _closest(backend, EXECUTORCH_BACKENDS)
        raise _usage(f"unknown backend {backend!r}; supported: {', '.join(ours + ['all'])}",
                     _hint(close, supported_pairs_text()))
    if recipe is not None and recipe != "all" and recipe not in supported_recipes():
        raise _unknown("recipe", recipe, supported_recipes() + ["all"])
    if backend in EXECUTORCH_BACKENDS and backend not in ours:
        if recipe in (None, "all"):
            raise _usage(f"backend {backend!r} (ExecuTorch has it) is not exported by etproof "
                         f"yet; supported: {', '.join(ours + ['all'])}",
                         f"backend/recipe pairs: {supported_pairs_text()}")
        return [(backend, recipe)]
    if backend == "all":
        return [p for p in sorted(RECIPES) if recipe in (None, "all") or p[1] == recipe]
    own = [r for b, r in sorted(RECIPES) if b == backend]
    if recipe is None:
        raise _usage(f"--recipe is required with --backend {backend}",
                     f"{backend} recipes: {', '.join(own)}, or all")
    if recipe == "all":
        return [(backend, r) for r in own]
    return [(backend, recipe)]


def _error_lines(results: list[dict]) -> list[str]:
    """One ``error [STAGE]: COLUMNS: REASON`` line per distinct failure, columns grouped, each
    followed by the library's whole error where one failed (_detail_lines)."""
    groups: dict[tuple[str, str], list[str]] = {}
    details: dict[tuple[str, str], dict | None] = {}
    for r in results:
        if r["status"] != EXPORTED:
            groups.setdefault((r["stage"], r["reason"]), []).append(
                f"{r['backend']}/{r['recipe']}")
            details.setdefault((r["stage"], r["reason"]), r.get("error"))
    return ["\n".join([f"error [{stage}]: {', '.join(cols)}: {reason}"]
                      + _detail_lines(details[(stage, reason)]))
            for (stage, reason), cols in groups.items()]


def _try_report(out: Path, results: list[dict]) -> None:
    from etproof.export.runner import write_report

    try:
        out.mkdir(parents=True, exist_ok=True)
        write_report(out, results, merge=True)
    except (OSError, ValueError) as e:  # the error being reported must not be lost to this one
        print(f"warning: could not update {out}/export-report.json: {e}", file=quiet.err())


def cmd_export(a) -> int:
    model_ref = a.model_pos or a.model
    if not model_ref or (a.model_pos and a.model and a.model_pos != a.model):
        raise InvalidArgument("give the model once: MODEL or --model MODEL",
                              "efficientnet_lite0, tiny, MODULE:FUNCTION or FILE.py:FUNCTION; "
                              f"see {command_name()} export --help", stage="export")
    pairs = _pairs_for(a.backend, a.recipe)
    out = Path(a.out)
    if len(pairs) > 1 and a.name:
        raise InvalidArgument("--name names one bundle; this writes several",
                              "drop --name (bundles are named NAME-BACKEND-RECIPE; set 'name' in "
                              "the returned dict to change NAME)", stage="export")
    if len(pairs) > 1 and a.taps_range is not None:
        raise InvalidArgument("--taps-range narrows one bundle's twin; this writes several",
                              "export one --backend and --recipe with it", stage="export")
    from etproof.contract import userspec
    from etproof.export.runner import result_for_error

    unsupported = [p for p in pairs if p not in RECIPES]
    if unsupported:  # refused before the model is even built, and said so in the report
        b, r = unsupported[0]
        what = (f"recipe {r!r} for backend {b!r}" if any(k[0] == b for k in RECIPES)
                else f"backend {b!r} (ExecuTorch has it; etproof does not export it yet)")
        e = InvalidArgument(f"unsupported {what}",
                            f"supported (backend/recipe) pairs: {supported_pairs_text()}",
                            stage="export")
        _try_report(out, [result_for_error(b, r, e)])
        raise e
    # The model dict is loaded and checked before OUT (and its log) is created: a refused dict
    # leaves nothing behind.
    from etproof.export.state import call_once

    loaded = userspec.load(model_ref, call_once)
    with _library_output(a, out) as capture:
        return _export_columns(a, loaded, pairs, out, capture)


@contextlib.contextmanager
def _library_output(a, out: Path):
    """The libraries' output during the export into OUT/export-log.txt (etproof.cli.quiet), said in
    one line, with the traceback of a failure; the terminal as before with --verbose, or where
    the log cannot be written."""
    with contextlib.ExitStack() as stack:
        capture = None
        if not a.verbose:
            log = out / quiet.LOG_NAME
            try:
                out.mkdir(parents=True, exist_ok=True)
                capture = stack.enter_context(quiet.library_output_to(
                    log, "etproof " + " ".join(sys.argv[1:])))
            except OSError as e:  # export_model says what is wrong with OUT
                print(f"warning: cannot write {log} ({e.strerror or e}); library output is "
                      "shown here", file=sys.stderr)
            else:
                print(f"ExecuTorch's and the backends' output (logs, progress): {log} "
                      "(--verbose shows it here)", file=quiet.out(), flush=True)
        try:
            yield capture
        except Exception as e:
            if capture is not None:  # the whole traceback, beside the library's logs
                traceback.print_exception(e.__cause__ or e, file=sys.stderr)
            raise


def _with_runtime_log(e: EtproofError, capture) -> None:
    """ExecuTorch's own runtime log lines about a failure (e.g. the operator a "0x14" load error
    misses), kept with the library's error (shown under it) where its output went to the log
    and the error has none of its own (lower.run_failed keeps those of the run that failed)."""
    logged = capture.runtime_errors() if capture is not None else []
    if logged and e.detail is not None and "log" not in e.detail:
        e.detail["log"] = logged


def _step_log(msg: str) -> None:
    """export_model's per-step progress: into OUT/export-log.txt with the libraries' output while
    it is captured (stdout points there), on the terminal with --verbose."""
    print(msg, flush=True)


def _export_summary(results: list[dict], out: Path, capture) -> None:
    """The export's closing lines: what was written, refused and failed, where the report (and
    the log) are, and the command to run next."""
    n = {k: sum(1 for r in results if r["status"] == k) for k in NOT_FAILED}
    failed = len(results) - n[EXPORTED] - n[EXPORT_REFUSED]
    where = f"{out / 'export-report.json'}" + (f", library output {out / quiet.LOG_NAME}"
                                                if capture is not None else "")
    bundles = "bundle" if n[EXPORTED] == 1 else "bundles"
    print(f"export: {n[EXPORTED]} {bundles} written, {n[EXPORT_REFUSED]} refused, {failed} "
          f"failed ({where})", file=quiet.out(), flush=True)
    if n[EXPORTED]:
        print(f"next: {_etproof_command()} matrix {out}   (every column against its bound)",
              file=quiet.out(), flush=True)


def _etproof_command() -> str:
    """How to call the runtime half from where the user is: build/etproof when that is it,
    else its absolute path in this checkout, else plain etproof (an installed one)."""
    built = backends.REPO / "build" / "etproof"
    if not built.is_file():
        return "etproof"
    try:
        rel = built.relative_to(Path.cwd().resolve())
    except ValueError:
        return str(built)
    return str(rel)


def _export_columns(a, loaded, pairs: list[tuple[str, str]], out: Path, capture) -> int:
    from etproof.export.pipeline import export_model
    from etproof.export.runner import export_pairs, exported_result, result_for_error

    step_log = _step_log if capture is not None else _log
    names = [a.name or f"{loaded.stem}-{b}-{r}" for b, r in pairs]
    if loaded.stem_from_function and not a.name:
        print(f"bundle name{'s' if len(names) > 1 else ''}: {', '.join(names)} (from the "
              "function name; set 'name' to change it)", file=quiet.out(), flush=True)
    if len(pairs) > 1:
        results = export_pairs(lambda: loaded.kwargs, loaded.stem, pairs, out, force=True,
                               log=_log, log_errors=False, taps=a.taps, step_log=step_log)
        _try_report(out, results)
        if a.bpte:
            _write_bptes(out, [r["bundle"] for r in results if r["status"] == EXPORTED])
        errors = _error_lines(results)
        for line in errors:
            print(line, file=quiet.err())
        _export_summary(results, out, capture)
        # for a CI script: 0 when a bundle was written and every other pair was refused for a
        # reason that fails nothing (export-refused: a missing prerequisite, a recipe that
        # quantizes nothing in this model); 1 when a pair failed or nothing was written
        written = any(r["status"] == EXPORTED for r in results)
        failed = any(r["status"] not in NOT_FAILED for r in results)
        return EXIT_OK if written and not failed else EXIT_FAILED
    (backend, recipe), = pairs
    try:
        extra = {"taps": a.taps, "taps_from": _model_ref_for_record(a.model_pos or a.model)} \
            if a.taps else {}
        if a.taps_range is not None:
            extra["taps_range"] = a.taps_range
        t0 = time.monotonic()
        path = export_model(name=names[0], out_dir=out, backend=backend, recipe=recipe,
                            log=step_log, **extra, **loaded.kwargs)
    except EtproofError as e:
        _with_runtime_log(e, capture)
        _try_report(out, [result_for_error(backend, recipe, e, loaded.stem)])
        raise
    result = exported_result(backend, recipe, path.name, loaded.stem)
    _try_report(out, [result])
    _log(f"{path.name}: exported in {time.monotonic() - t0:.1f} s")
    print(path, file=quiet.out())
    if a.bpte:
        _write_bptes(out, [path.name])
    _export_summary([result], out, capture)
    return EXIT_OK


def _write_bptes(out: Path, names: list[str]) -> None:
    """export --bpte: OUT/NAME/NAME.bpte for each exported bundle (etproof.export.bpte). A bundle
    a BundledProgram cannot carry (a .ptd, sequence cases) gets none, said on one line: the
    bundle itself is written and fails nothing."""
    from etproof.export.bpte import BpteUnsupported, write_bpte

    for name in names:
        try:
            path = write_bpte(out / name)
        except BpteUnsupported as e:
            print(f"{name}: no .bpte: {e.cause}", file=quiet.out(), flush=True)
            continue
        print(f"{name}: ExecuTorch BundledProgram {path}", file=quiet.out(), flush=True)


def _model_ref_for_record(ref: str) -> str:
    """MODEL as the twin records it (taps.exported_from): FILE.py:FUNCTION with FILE absolute, so
    that ``etproof attribute --bisect`` finds it from another directory; other forms as given."""
    file, sep, func = ref.rpartition(":")
    if sep and file.endswith(".py"):
        return f"{Path(file).resolve()}:{func}"
    return ref


def _tap_range(text: str) -> tuple[int, int]:
    """--taps-range FIRST:LAST: two whole numbers, 0 <= FIRST <= LAST."""
    first, sep, last = text.partition(":")
    try:
        r = (int(first), int(last)) if sep else None
    except ValueError:
        r = None
    if r is None or not 0 <= r[0] <= r[1]:
        raise argparse.ArgumentTypeError(f"takes FIRST:LAST, two eligible-node indices with "
                                         f"0 <= FIRST <= LAST, got {text!r}")
    return r


def cmd_test_bundles(a) -> int:
    with _library_output(a, Path(a.out)):
        return _test_bundles(a)


def _test_bundles(a) -> int:
    from etproof.fixtures.verdicts import export_verdict_bundles
    from etproof.fixtures.testbundles import (
        KERNEL_MISSING_DIR,
        export_kernel_missing_bundles,
        export_test_bundles,
    )

    if a.probes_only:  # the tiny model alone: what `etproof backends` replays
        from etproof.fixtures.testbundles import export_probe_bundles

        results = export_probe_bundles(Path(a.out), force=a.force, log=_log)
        return EXIT_OK if all(r["status"] == EXPORTED for r in results) else EXIT_ERROR
    results = export_test_bundles(Path(a.out), force=a.force, log=_log)
    # The gate's verdict cases (etproof.fixtures.verdicts), one level down so that a matrix over
    # OUT sees only the tiny columns; a column refused here (a missing prerequisite) is not an
    # error: its tests skip by name.
    verdicts = export_verdict_bundles(Path(a.out) / "verdicts", force=a.force, log=_log)
    # A program this runtime cannot load (an operator without a kernel), one level down too.
    missing = export_kernel_missing_bundles(Path(a.out) / KERNEL_MISSING_DIR, force=a.force,
                                            log=_log)
    ok = (all(r["status"] == EXPORTED for r in results + missing)
          and all(r["status"] in NOT_FAILED for r in verdicts))
    return EXIT_OK if ok else EXIT_ERROR


def cmd_demo(a) -> int:
    with _library_output(a, Path(a.out)):
        return _demo(a)


def _demo(a) -> int:
    from etproof.demo.demo import run_demo

    report = run_demo(Path(a.out), force=a.force, log=_log, all_columns=a.all_columns,
                      quick=a.quick)
    # A column refused for a missing prerequisite is reported, not a failure of the demo.
    return (EXIT_OK if all(r["status"] in NOT_FAILED for r in report["results"])
            else EXIT_ERROR)


def cmd_golden_set(a) -> int:
    with _library_output(a, Path(a.out)):
        return _golden_set(a)


def _golden_set(a) -> int:
    from etproof.goldens.golden_set import run_golden_set

    report = run_golden_set(Path(a.out), force=a.force, log=_log, all_columns=a.all_columns,
                            reuse_from=Path(a.reuse) if a.reuse else None, only=a.only,
                            jobs=a.jobs, quick=a.quick)
    # A column that does not lower for one model is a finding, reported in export-report.json and
    # above; a model with no bundle at all is a failure of the golden set.
    models: dict[str, bool] = {}
    for r in report["results"]:
        models[r.get("model", "?")] = models.get(r.get("model", "?"), False) or (
            r["status"] == EXPORTED)
    empty = [m for m, ok in models.items() if not ok]
    for m in empty:
        print(f"error [export]: {m}: no column exported", file=sys.stderr)
    return EXIT_ERROR if empty else EXIT_OK


def cmd_plot_attribution(a) -> int:
    """Draws the attribution reports into --out (etproof.cli.plot)."""
    from etproof.cli import plot

    out = plot.plot_attribution(plot.load_attributions(a.reports), Path(a.out))
    print(f"plot: {out}")
    return EXIT_OK


def cmd_probe(a) -> int:
    """The export half of every backend (or --only KEY ...): a table, or JSON with --json."""
    table = backends.load_table()
    for k in a.only or []:
        if k not in table:
            close = _closest(k, table)
            raise _usage(f"unknown backend {k!r}; backends: {', '.join(table)}",
                         f"did you mean {close[0]!r}?" if close else "see data/backends.json")
    t0 = time.monotonic()
    results = probe.probe_all(only=a.only, timeout_s=a.timeout, refresh=a.refresh,
                                 cache_dir=a.cache_dir)
    if a.json:
        export = []
        for r in results:
            e = {k: r[k] for k in ("backend", "status", "reason", "needs")}
            if "delegates" in r:
                e["delegates"] = r["delegates"]
            export.append(e)
        print(json.dumps({"export": export}, sort_keys=True, indent=2))
        return EXIT_OK
    width = max(len(r["backend"]) for r in results)
    print(f"{'backend':<{width}}  {'export half':<16}  reason")
    for r in results:
        print(f"{r['backend']:<{width}}  {r['status']:<16}  {r['reason']}")
    print(f"({time.monotonic() - t0:.1f} s; cached answers are reused until the toolchain or "
          "data/backends.json changes, --refresh re-probes)")
    return EXIT_OK


def _log(msg: str) -> None:
    print(msg, file=quiet.out(), flush=True)


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors in etproof's format (exit 2) and an epilog that may be computed
    when help is shown (``epilog_from``: a function), so that building the parser imports
    nothing heavy."""

    def __init__(self, *args, epilog_from=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._epilog_from = epilog_from

    def format_help(self):
        if self._epilog_from is not None:
            self.epilog = self._epilog_from()
        return super().format_help()

    def error(self, message):  # usage errors in etproof's format, exit 2
        raise InvalidArgument(message, f"see {self.prog} --help")


def _userspec_contract() -> str:
    from etproof.contract import userspec

    return userspec.CONTRACT


def _tap_count(text: str) -> int:
    """--taps N: a whole number >= 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"takes a number of taps >= 1, got {text!r}")
    return n


def _export_parser(sub) -> None:
    """``export``'s arguments."""
    e = sub.add_parser("export", help="export one model to one bundle per (backend, recipe)",
                       description="Export MODEL to one bundle per (backend, recipe).\n"
                                   + textwrap.fill(f"Supported pairs: {supported_pairs_text()}.", 100,
                                                   subsequent_indent="  "),
                       epilog_from=_userspec_contract, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("model_pos", nargs="?", metavar="MODEL",
                   help="efficientnet_lite0, tiny, MODULE:FUNCTION or FILE.py:FUNCTION "
                        "(FUNCTION's contract: below)")
    e.add_argument("--model", help="the same as MODEL")
    e.add_argument("--backend", required=True,
                   help=f"{', '.join(supported_backends())}, or all; or a comma list")
    e.add_argument("--recipe", help=f"{', '.join(supported_recipes())}, or all (default with "
                                    "--backend all: every pair); or a comma list (every "
                                    "supported pair of the two lists)")
    e.add_argument("--out", required=True, help="output directory (bundles go in OUT/NAME/)")
    e.add_argument("--name", help="bundle name (default NAME-BACKEND-RECIPE, NAME from the dict's "
                                  "'name', else the function's name)")
    e.add_argument("--taps", nargs="?", const=True, type=_tap_count, metavar="N",
                   help="also write each bundle's tapped twin OUT/NAME/NAME.taps (intermediate "
                        "values as extra outputs, docs/manifest.md \"The tapped twin\"): every "
                        "eligible node (up to 256), or N evenly spaced; float recipes tap the "
                        "lowered graph, the PT2E int8 recipes their converted graph "
                        "(etproof.export.taps_quantized)")
    e.add_argument("--taps-range", type=_tap_range, metavar="FIRST:LAST",
                   help="with --taps: choose the taps among the eligible nodes FIRST..LAST only "
                        "(the twin's taps.points[].eligible_index; etproof attribute --bisect "
                        "passes it)")
    e.add_argument("--bpte", action="store_true",
                   help="also write ExecuTorch's BundledProgram of each bundle, OUT/NAME/NAME.bpte "
                        "(its program with the golden cases as test inputs and expected outputs, "
                        "written by executorch.devtools: ExecuTorch's own runners check it)")
    _verbose_option(e, "beside export-report.json")
    e.set_defaults(func=cmd_export)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=command_name(),
                                description="etproof export half: PyTorch -> ExecuTorch bundles")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    _export_parser(sub)
    t = sub.add_parser("test-bundles", help="the tiny bundles the C++ tests use")
    t.add_argument("--out", default="build/test-bundles")
    t.add_argument("--force", action="store_true", help="re-export even when up to date")
    t.add_argument("--probes-only", action="store_true",
                   help="only the tiny model's bundles, which `etproof backends` replays as its "
                        "runtime probes (./setup.sh without --test)")
    _verbose_option(t)
    t.set_defaults(func=cmd_test_bundles)
    pr = sub.add_parser("probe", help="the export half of every backend, probed by lowering",
                        description="Lower a one-operation model for each backend of "
                                    "data/backends.json and require a delegate call.")
    pr.add_argument("--json", action="store_true", help='print {"export": [...]}')
    pr.add_argument("--refresh", action="store_true", help="ignore cached answers")
    pr.add_argument("--only", nargs="+", metavar="KEY", help="probe only these backends")
    pr.add_argument("--timeout", type=float, default=120.0, help="seconds per backend")
    pr.add_argument("--cache-dir", help="where answers are cached (default build/.etproof-cache)")
    pr.set_defaults(func=cmd_probe)
    d = sub.add_parser("demo", help="EfficientNet-Lite0 bundles and the golden photos")
    d.add_argument("--out", default="build/demo")
    d.add_argument("--force", action="store_true", help="re-export even when up to date")
    d.add_argument("--all-columns", action="store_true",
                   help="also the columns left out by default (no gate bound yet)")
    d.add_argument("--quick", action="store_true",
                   help="only the columns this x86-64 host runs: portable, xnnpack fp32 and "
                        "int8 (dynamic and static), openvino (./setup.sh without --full)")
    _verbose_option(d)
    d.set_defaults(func=cmd_demo)
    g = sub.add_parser("golden-set", help="every golden model for every demo column, one directory",
                       description="Export the golden set (EfficientNet-Lite0, all-MiniLM-L6-v2, "
                                   "MobileNetV3-Small and one model per operator family) for every "
                                   "column the demo exports, into OUT/bundles with one "
                                   "export-report.json. Exit 0 when every model exported at least "
                                   "one column; the columns that did not are in the report.")
    g.add_argument("--out", default="build/golden-set")
    g.add_argument("--force", action="store_true", help="re-export even when up to date")
    g.add_argument("--all-columns", action="store_true",
                   help="also the columns the demo leaves out by default")
    g.add_argument("--reuse", default="build/demo", metavar="DEMO_OUT",
                   help="copy EfficientNet-Lite0 bundles that are up to date in DEMO_OUT/bundles "
                        "instead of exporting them again (default build/demo; '' for none)")
    g.add_argument("--only", nargs="+", metavar="MODEL", help="export only these golden models")
    g.add_argument("--quick", action="store_true",
                   help="EfficientNet-Lite0, MobileNetV3-Small and the op goldens on the quick "
                        "demo's columns (./setup.sh without --full)")
    g.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="export N models at once, each in a process of its own (default 1; "
                        "setup.sh passes the number of cores, up to 4)")
    _verbose_option(g)
    g.set_defaults(func=cmd_golden_set)
    pa = sub.add_parser("plot-attribution",
                        help="draw `etproof attribute --json` reports: SQNR against depth",
                        description="Draw the SQNR of every tap against its depth, one line per "
                                    "column, with each column's bound and earliest drift "
                                    "(etproof attribute --plot runs this).")
    pa.add_argument("reports", nargs="+", metavar="REPORT.json",
                    help="what `etproof attribute --json` printed (an object or a list)")
    pa.add_argument("--out", required=True, help="FILE.svg or FILE.png")
    pa.set_defaults(func=cmd_plot_attribution)
    return p


def _verbose_option(parser, where: str = "") -> None:
    parser.add_argument("--verbose", action="store_true",
                        help="show ExecuTorch's and the backends' logs and progress bars here "
                             f"(default: appended to OUT/{quiet.LOG_NAME}"
                             + (f", {where})" if where else ")"))


def _taps_before_model(argv: list[str]) -> list[str]:
    """``export --taps MODEL ...``: argparse would read MODEL as --taps' count (nargs="?"); a
    token after a bare --taps that is neither a whole number nor an option is moved before it,
    so it is the positional MODEL it was meant to be."""
    out = list(argv)
    if "export" not in out:
        return out
    for i in range(out.index("export") + 1, len(out) - 1):
        nxt = out[i + 1]
        if out[i] == "--taps" and not nxt.startswith("-") and not nxt.strip().isdigit():
            out[i], out[i + 1] = nxt, out[i]
            break
    return out


def main(argv=None) -> int:
    parser = build_parser()
    try:
        a = parser.parse_args(_taps_before_model(sys.argv[1:] if argv is None else argv))
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
