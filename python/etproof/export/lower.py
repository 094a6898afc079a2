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

import importlib
import logging
import os

from etproof.backends import (
    kernel_libraries,
    load_table,
    missing_prerequisite,
    needs_text,
)
from etproof.export.delegation import Rejections
from etproof.errors import STAGE_REMEDY, ExportError, InvalidArgument, first_line
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
                fresh: bool = False, entries=()) -> list | None:
    """Runs the written program (``method`` on ``inputs``, then on each of ``more_inputs``) in
    ExecuTorch's Python runtime, where that runtime has every delegate of the program; returns
    the outputs of each run (a list of tensors per run, in that order), or None where it could
    not run here (a delegate the Python runtime lacks).

    program: the .pte bytes, or its path where ``data_path`` (its .ptd) is given. A program that
    fails to run, or returns other than ``n_outputs`` outputs, is ExportError (stage "lower").
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
        return False
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
    runs = []

    def load():
        loaded = (rt.load_program(program, data_path=data_path) if data_path is not None
                  else rt.load_program(program))
        if fresh:
            for other in sorted(loaded.method_names):
                loaded.load_method(other)
        return loaded

    try:
        loaded = load()
        for i, run_inputs in enumerate((inputs, *more_inputs)):
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
    except ExportError:
        raise
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"the lowered program does not run in ExecuTorch {version('executorch')}"
                          f" (Python runtime): {first_line(e)}",
                          STAGE_REMEDY["lower"], stage="lower") from e
    say(f"{name}: ran {'once' if len(runs) == 1 else f'{len(runs)} times'} in ExecuTorch's "
        "Python runtime")
    return runs
