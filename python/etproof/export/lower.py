"""Lowering: a torch.export program -> an ExecuTorch edge program for one (backend, recipe).

The backend's partitioner comes from the backend table and is configured here, the one place
etproof configures one (for an export and, at its smallest, for the probe). Also: the checks that
refuse a backend before anything is imported, the precision the delegate will compute in, and
the check that the written program runs once in ExecuTorch's Python runtime.

May import: the table (etproof.backends), the supported pairs (etproof.contract.recipes), etproof.export.delegation,
the backends' quirks (etproof.export.quirks: how a backend's partitioner is configured and what it
computes in), toolchain facts and errors; ExecuTorch and the backends' packages only inside functions (they are
heavy, and some are absent on a given machine).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import sys
import tempfile

from etproof.backends import (
    kernel_libraries,
    load_table,
    missing_prerequisite,
    needs_text,
)
from etproof.export.delegation import Rejections
from etproof.errors import (STAGE_REMEDY, ExportError, InvalidArgument, error_detail,
                            executorch_said, first_line, name_error_codes, runtime_log_lines)
from etproof.contract.recipes import RECIPES
from etproof.export.quirks import quirks_for
from etproof.export.toolchain import version

# Test hook: "BACKEND/RECIPE[,...]" in this variable makes those pairs fail at stage "lower" (after
# quantization, before anything is written), so tests can show one failing column never stops
# the others. Never set it outside tests.
TEST_FAIL_ENV = "ETPROOF_TEST_FAIL_LOWER"

def check_export_needs(backend: str) -> None:
    """Refuses (InvalidArgument, stage "export": an export-refused column) a backend whose Python
    modules are missing, or whose SDK variable is unset where importing without it would reach for
    the network, before anything is imported: the same checks as the probe, from the table."""
    entry = load_table()[backend]
    missing = missing_prerequisite(entry)
    if missing is not None:
        raise InvalidArgument(f"{backend}: {missing}", f"needs: {needs_text(entry)}",
                              stage="export")


def partitioner_class(key: str):
    """The partitioner class the table names for backend ``key`` (None for the portable
    backend), imported. Importing the Vulkan partitioner sets the root logger to INFO; the level
    is put back. Raises whatever the import raises (ImportError, or the package's own error)."""
    p = load_table()[key]["partitioner"]
    if p is None:
        return None
    root_level = logging.getLogger().level
    try:
        return getattr(importlib.import_module(p["module"]), p["class"])
    finally:
        logging.getLogger().setLevel(root_level)


def make_partitioner(key: str, recipe: dict | None = None):
    """The backend's partitioner, configured for one of its table recipes (or the smallest
    configuration, minimum_partitioner, where ``recipe`` is None); None for the portable backend.

    The backend's quirks configure it (etproof.export.quirks: Core ML's compile specs from the
    recipe's compute_unit, precision and minimum_deployment_target).
    """
    cls = partitioner_class(key)
    if cls is None:
        return None
    return quirks_for(key).partitioner(cls, recipe)


def minimum_partitioner(key: str, cls):
    """An instance of backend ``key``'s partitioner class with the smallest configuration it
    accepts, from the backend's quirks (OpenVINO: device OPENVINO_DEVICE; Arm: TOSA-1.0+FP,
    ethos-u55-128, VGF defaults; Metal, CUDA: no compile specs; otherwise ``cls()``)."""
    return quirks_for(key).minimum_partitioner(cls)


def tag_external_weights(ep, tag: str, example_inputs: tuple, dynamic_shapes):
    """ExecuTorch's delegate_external_constants_pass_unlifted on ``ep``'s unlifted module (every
    constant tagged ``tag``), then torch.export again, strict (the tag lives in the nodes'
    meta["custom"], which only a strict export carries over to the lifted placeholders).

    Delegates that read the tag (XNNPACK) then put those weights in the named data ``tag``
    instead of their blob; lower's ``external_tag`` does the same for non-delegated constants.
    Returns the re-exported program. Raises whatever torch.export raises.
    """
    import torch
    from executorch.exir.passes.external_constants_pass import (
        delegate_external_constants_pass_unlifted,
    )

    module = ep.module()
    delegate_external_constants_pass_unlifted(module, lambda _node: tag)
    return torch.export.export(module, tuple(example_inputs), dynamic_shapes=dynamic_shapes,
                               strict=True)


def lower(ep, backend: str, recipe: str, facts: dict, external_tag: str | None = None):
    """Lowers the exported program ``ep`` with the table's partitioner, configured for the recipe
    (make_partitioner; ``facts`` is RECIPES[(backend, recipe)]). ``ep`` may be a dict {method
    name: ExportedProgram} (a program with several methods; the partitioner applies to each).

    external_tag: the program's non-delegated constants go into the named data ``external_tag``
    (ExecutorchBackendConfig.external_constants), written beside the program (NAME.ptd); a
    delegate's weights only where tag_external_weights tagged ``ep`` first.

    Returns (edge program, ExecutorchBackendConfig or None, Rejections heard while lowering).
    Raises whatever ExecuTorch raises (the caller stages it as "lower"), and RuntimeError for a
    pair named in TEST_FAIL_ENV.
    """
    edge, config, rejections = _lower(ep, backend, recipe, facts)
    if external_tag is not None:
        if config is None:
            from executorch.exir import ExecutorchBackendConfig

            config = ExecutorchBackendConfig()
        config.external_constants = lambda _node: external_tag
    return edge, config, rejections


def _lower(ep, backend: str, recipe: str, facts: dict):
    from executorch.exir import to_edge_transform_and_lower

    forced = os.environ.get(TEST_FAIL_ENV, "")
    if f"{backend}/{recipe}" in [p.strip() for p in forced.split(",")]:
        raise RuntimeError(f"forced failure of {backend}/{recipe} ({TEST_FAIL_ENV}, a test hook)")
    rejections = Rejections()
    if facts["partitioner"] is None:
        return to_edge_transform_and_lower(ep, partitioner=[]), None, rejections
    part = make_partitioner(backend, facts["entry"])
    kwargs, config = quirks_for(backend).lowering_config()  # XNNPACK: its compile configs
    with rejections:
        edge = to_edge_transform_and_lower(ep, partitioner=[part], **kwargs)
    return edge, config, rejections


def effective_precision(backend: str, recipe: str) -> str:
    """The precision the delegate will compute in for (backend, recipe) when lowered here.

    The table's precision, unless the backend's quirks say otherwise (OpenVINO: its CPU plugin
    compiles with the device's default INFERENCE_PRECISION_HINT (bf16 on CPUs with native bf16,
    e.g. AVX512_BF16 or AMX) and ExecuTorch's OpenVINO compile specs cannot override it (their
    values reach openvino_compile as strings; its "config" must be a dict). So the manifest
    records what the plugin reports; etproof.export.quirks.openvino).
    """
    facts = RECIPES[(backend, recipe)]
    return quirks_for(backend).effective_precision(facts["precision"], recipe)


def kernel_library_for(op: str) -> str:
    """The kernel library that would provide operator ``op`` (``NAMESPACE::NAME.OVERLOAD``), from
    the backend table's kernel_libraries (the runtime half reads the same entries)."""
    return kernel_libraries().get(op.split("::", 1)[0], f"the library that registers {op}")


def missing_python_kernels(operators) -> list[str]:
    """The names among ``operators`` (registry names, etproof.export.toolchain.operators_in_program)
    that ExecuTorch's Python runtime registers no kernel for, in order."""
    from executorch.extension.pybindings.portable_lib import _get_operator_names

    have = set(_get_operator_names())
    return [op for op in operators if op not in have]


def verify_runs(program, data_path, inputs, delegates, n_outputs, say, name,
                operators=None, method: str = "forward", more_inputs=(),
                fresh: bool = False, entries=(), input_names=()) -> list | None:
    """Runs the written program (``method`` on ``inputs``, then on each of ``more_inputs``) in
    ExecuTorch's Python runtime, where that runtime has every delegate of the program; returns
    the outputs of each run (a list of tensors per run, in that order), or None where it could
    not run here (a delegate the Python runtime lacks).

    program: the .pte bytes, or its path where ``data_path`` (its .ptd) is given. A program that
    fails to run, or returns other than ``n_outputs`` outputs, is ExportError (stage "lower");
    one that fails to load or run names ExecuTorch's error code and, from ExecuTorch's own log of
    that load and run (ExecutorchLog: passed on unchanged), the lines that explain it
    (run_failed). input_names: the inputs' names, for that error (by position where absent).
    operators: the operators the program calls outside its delegates (registry names); one the
    Python runtime has no kernel for is ExportError naming it and its kernel library, before
    anything runs (ExecuTorch itself would say only "error: 0x14", OperatorMissing).
    fresh: the program writes state (etproof.export.state): each run loads the program afresh,
    so each starts from its initial state (a method loaded again on the same program keeps the
    state its last run left: measured with ExecuTorch 1.5.1's Python runtime), except as
    ``entries[i]`` (GoldenCase.entry: one per run) says: True (a sequence's later step)
    continues the state of the run before it; a tuple of ``(METHOD, INPUTS)`` (the steps
    before, some through another method) runs those through the program's methods first.
    Every method of the program is loaded before any runs: a program whose methods share their
    state (share_mutable_buffers) initializes it as each method loads (measured, ExecuTorch
    1.5.1's Python runtime: accumulator_chain's ``read`` loaded after ``forward`` ran answers
    0.29 off its golden, loaded before it 3e-8).
    """
    from executorch.runtime import Runtime

    rt = Runtime.get()
    registry = rt.backend_registry
    missing = [d for d in delegates if not registry.is_available(d)]
    if missing:
        have = ", ".join(sorted(registry.registered_backend_names)) or "none"
        say(f"{name}: not run in Python: ExecuTorch's Python runtime has no available "
            f"{', '.join(missing)} (registered: {have})")
        return None
    no_kernel = missing_python_kernels(operators or [])
    if no_kernel:
        libs = "; ".join(f"{op}: {kernel_library_for(op)}" for op in no_kernel)
        one = len(no_kernel) == 1
        raise ExportError(
            f"the lowered program calls {'an operator' if one else f'{len(no_kernel)} operators'}"
            f" ExecuTorch {version('executorch')}'s Python runtime has no kernel for: "
            f"{', '.join(no_kernel)} (its kernel registry, asked before running)",
            f"the kernel library that would provide {'it' if one else 'each'}: {libs}. Decompose "
            f"{'it' if one else 'each'} into operators ExecuTorch has kernels for (rewrite that "
            "part of the model), or lower to a backend whose delegate takes it; a runtime that "
            "links such a kernel can run the program exported without this check (verify=False)",
            stage="lower")

    def load():
        loaded = (rt.load_program(program, data_path=data_path) if data_path is not None
                  else rt.load_program(program))
        if fresh:
            for other in sorted(loaded.method_names):
                loaded.load_method(other)
        return loaded

    log = ExecutorchLog()
    try:
        with log:
            runs = _run_all(load, method, n_outputs, [inputs, *more_inputs], entries, fresh)
    except ExportError:
        raise
    except Exception as e:  # noqa: BLE001
        raise run_failed(e, log.lines, [inputs, *more_inputs], input_names) from e
    say(f"{name}: ran {'once' if len(runs) == 1 else f'{len(runs)} times'} in ExecuTorch's "
        "Python runtime")
    return runs


def _run_all(load, method: str, n_outputs: int, all_inputs: list, entries, fresh: bool) -> list:
    """verify_runs' runs: ``method`` on each of ``all_inputs``, as verify_runs says."""
    runs = []
    loaded = load()
    for i, run_inputs in enumerate(all_inputs):
        entry = entries[i] if i < len(entries) else False
        if fresh and i and entry is not True:
            loaded = load()
        for other, before in (entry if isinstance(entry, tuple) else ()):
            loaded.load_method(other).execute(list(before))
        outs = list(loaded.load_method(method).execute(list(run_inputs)))
        if len(outs) != n_outputs:
            raise ExportError(f"the lowered program returned {len(outs)} outputs, the model "
                              f"{n_outputs}", STAGE_REMEDY["lower"], stage="lower")
        runs.append(outs)
    return runs


def run_failed(e: Exception, logged: list[str], all_inputs: list,
               input_names=()) -> ExportError:
    """The ExportError (stage "lower") of a program that failed to load or run in ExecuTorch's
    Python runtime with ``e``: ``the lowered program does not run in ExecuTorch V (Python
    runtime): MESSAGE (CODE NAME): ExecuTorch said: LINES`` (errors.executorch_said over
    ``logged``, runtime_log_lines of that load and run), then each input whose dim order is
    neither contiguous nor channels-last (unusual_dim_orders), with a remedy that gives the
    input a layout ExecuTorch takes. ``detail`` is e's (errors.error_detail) with ``log``:
    ``logged`` whole."""
    cause = (f"the lowered program does not run in ExecuTorch {version('executorch')} (Python "
             f"runtime): {name_error_codes(first_line(e))}")
    said = executorch_said(logged)
    if said:
        cause += f": {said}"
    odd = unusual_dim_orders(all_inputs, input_names)
    remedy = STAGE_REMEDY["lower"]
    if odd:
        cause += "; " + "; ".join(text for _, text in odd)
        names = ", ".join(n for n, _ in odd)
        one = odd[0][0] if input_names else "x"
        remedy = (f"give {names} in contiguous memory format in example_inputs and "
                  f"golden_inputs ({one}.to(memory_format=torch.contiguous_format)")
        if all(" has dim order 0,2," in text for _, text in odd):  # 4-D/5-D, channels-last-like
            remedy += (f": {one}.contiguous() keeps these strides), or channels-last only with "
                       "C > 1: a channels-last tensor with C=1 has no single dim order, and "
                       "ExecuTorch reads it as one its kernels and delegates refuse")
        else:
            remedy += f" or {one}.contiguous())"
    detail = error_detail(e)
    if logged:
        detail["log"] = list(logged)
    return ExportError(cause, remedy, stage="lower", detail=detail)


def unusual_dim_orders(all_inputs: list, input_names=()) -> list[tuple[str, str]]:
    """``(NAME, TEXT)`` for each input tensor of ``all_inputs`` (one list of inputs per run;
    each position once) whose strides give a dim order that is neither the default (0,1,2,...)
    nor channels-last (0,2,3,1 for 4 dimensions, 0,2,3,4,1 for 5): ExecuTorch orders the
    dimensions by stride, largest first, ties in index order (its Python runtime gives a
    channels-last 1x1x8x8 tensor, strides (64, 1, 8, 1), dim order 0,2,1,3). TEXT: ``input x
    (1x1x8x8, strides (64, 1, 8, 1)) has dim order 0,2,1,3, neither contiguous (0,1,2,3) nor
    channels-last (0,2,3,1)``. NAME: the input's name, else ``input N``."""
    found: dict[int, tuple[str, str]] = {}
    for run_inputs in all_inputs:
        for i, t in enumerate(run_inputs):
            strides = getattr(t, "stride", None)
            if i in found or not callable(strides) or getattr(t, "dim", lambda: 0)() < 2:
                continue
            n = t.dim()
            order = sorted(range(n), key=lambda d: -t.stride(d))
            default = list(range(n))
            last = [0, *range(2, n), 1] if n in (4, 5) else None
            if order in (default, last):
                continue
            name = input_names[i] if i < len(input_names) else f"input {i}"
            said = f"input {name}" if i < len(input_names) else name
            plain = f"contiguous ({','.join(map(str, default))})"
            what = (f"neither {plain} nor channels-last ({','.join(map(str, last))})" if last
                    else f"not {plain}")
            found[i] = (name, f"{said} ({'x'.join(map(str, t.shape))}, strides "
                              f"{tuple(t.stride())}) has dim order {','.join(map(str, order))}, "
                              f"{what}")
    return [found[i] for i in sorted(found)]


def _flush_streams() -> None:
    """Python's and C's buffered output written out, before file descriptor 2 changes."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).fflush(None)


class _Tee(io.TextIOBase):
    """A text stream writing to ``stream`` and keeping a copy of what it wrote."""

    def __init__(self, stream):
        self._stream = stream
        self.kept = io.StringIO()

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.kept.write(s)
        if self._stream is not None:
            self._stream.write(s)
        return len(s)

    def flush(self) -> None:
        if self._stream is not None:
            self._stream.flush()


class ExecutorchLog:
    """While inside: what is written to Python's sys.stderr (where ExecuTorch 1.5.1's Python
    runtime logs: measured) is kept as it goes on to that stream, and file descriptor 2 (where
    C++ code logs directly) writes to a temporary file, put back on leaving and what was written
    there written on to it: the terminal or OUT/export-log.txt get it all. ``lines``: ExecuTorch's
    log lines of both that explain a failure (errors.runtime_log_lines), once each. Where fd 2
    cannot be redirected, sys.stderr alone is read. Not reentrant; one thread."""

    def __init__(self):
        self.lines: list[str] = []
        self._saved: int | None = None
        self._tmp = None
        self._tee: _Tee | None = None
        self._stderr = None

    def __enter__(self) -> "ExecutorchLog":
        _flush_streams()
        try:
            self._tmp = tempfile.TemporaryFile()
            self._saved = os.dup(2)
            os.dup2(self._tmp.fileno(), 2)
        except OSError:
            self._close()
        self._stderr = sys.stderr
        self._tee = sys.stderr = _Tee(self._stderr)
        return self

    def __exit__(self, *exc) -> bool:
        _flush_streams()
        if sys.stderr is self._tee:
            sys.stderr = self._stderr
        text = self._tee.kept.getvalue() if self._tee is not None else ""
        data = b""
        try:
            if self._saved is not None:
                os.dup2(self._saved, 2)
                self._tmp.seek(0)
                data = self._tmp.read()
                view = memoryview(data)
                while view:
                    view = view[os.write(2, view):]
        except OSError:
            pass
        finally:
            self._close()
        self.lines = runtime_log_lines(text + "\n" + data.decode("utf-8", errors="replace"))
        return False

    def _close(self) -> None:
        if self._saved is not None:
            with contextlib.suppress(OSError):
                os.close(self._saved)
            self._saved = None
        if self._tmp is not None:
            self._tmp.close()
            self._tmp = None
