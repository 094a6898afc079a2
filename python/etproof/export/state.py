"""A program's state: the buffers its methods mutate, and the rule every golden case follows —
each case starts from the model's initial state (docs/design.md §5, "State").

A model whose ``forward`` writes into a registered buffer (a running total, a KV cache, a step
counter) gives every call another history. So that a golden means one thing in both halves:

- every eager run of a golden case (the float32 golden, the float64 truth, the precision and
  recipe emulations, calibration) starts from the state the model had when the export began
  (``InitialState.restore`` before each call), and the export leaves the model as it found it;
- the program written holds that initial state: ExecuTorch leaves a mutable buffer
  uninitialized unless ``InitializedMutableBufferPass`` marks it (measured with ExecuTorch
  1.5.1: a buffer registered as 10.0 starts the program at 0.0 without it), so the export marks
  every mutated buffer;
- the runtime half replays each case on a freshly loaded method (the manifest's ``state``
  tells it to), and the export's own run of the program loads it afresh per case.

The buffers are found where torch.export shows them: ``graph_signature.buffers_to_mutate`` of
the edge program (an in-place ``add_`` on a buffer appears there only after decomposition, so
the ExportedProgram before ``to_edge`` lists none).
"""

from __future__ import annotations

from etproof.errors import ExportError

# A method module (etproof.contract.program.method_module) holds the user's model as the
# submodule ``model``: buffer names are reported without that prefix, as the user wrote them.
_METHOD_PREFIX = "model."


class InitialState:
    """The buffers of ``module`` (and of every submodule) as they are now; ``restore()`` puts
    each back, in place (a buffer the model rebound to a new tensor is rebound to its original
    tensor, which gets the saved values). Parameters are not saved: a model in eval mode does
    not write them, and saving them would double the memory of the export."""

    def __init__(self, module) -> None:
        self._slots = []
        for mod in module.modules():
            for name, t in mod._buffers.items():  # noqa: SLF001 — the registry itself, by name
                if t is not None:
                    self._slots.append((mod, name, t, t.detach().clone()))

    def restore(self) -> None:
        import torch

        with torch.no_grad():
            for mod, name, original, saved in self._slots:
                if mod._buffers.get(name) is not original:  # noqa: SLF001
                    mod._buffers[name] = original  # noqa: SLF001
                if original.shape != saved.shape or original.dtype != saved.dtype:
                    original.data = saved.clone()
                else:
                    original.copy_(saved)


def call_once(module, inputs):
    """``module(*inputs)`` without gradients, from the state ``module`` has now, which it has again
    afterwards (run_fresh): the model dict's check (etproof.contract.userspec.load) runs it once."""
    import torch

    with torch.no_grad():
        return run_fresh(module, [tuple(inputs)])[0]


def run_fresh(module, calls, entries=(), cast=None) -> list:
    """``[module(*inputs) for inputs in calls]``, each call from the state ``module`` has now,
    which it has again afterwards — except where ``entries[i]`` (GoldenCase.entry) says
    otherwise: True (a sequence case's later step, GoldenCase.carries) runs on the state the
    call before it left; a tuple of ``(METHOD, INPUTS)`` (GoldenCase.prefix: the steps before,
    some through another method) runs those calls first, from the initial state, through the
    program's methods on ``module`` (program_method), each INPUTS passed through ``cast``
    (the caller's cast of its own calls' inputs, e.g. to float64)."""
    state = InitialState(module)
    results = []
    try:
        for i, inputs in enumerate(calls):
            entry = entries[i] if i < len(entries) else False
            if entry is not True:
                state.restore()
            for method, before in (entry if isinstance(entry, tuple) else ()):
                program_method(module, method)(*(cast(before) if cast else before))
            results.append(module(*inputs))
    finally:
        state.restore()
    return results


def program_method(module, method: str):
    """The callable of the program's method ``method`` on ``module``: a method's module
    (etproof.contract.program.method_module: a view of the model, or a wrapper holding it as
    ``model``), the model itself (forward), or a deep copy of any of these (the float64 truth,
    the half-precision and torchao emulations), whose state it shares with ``module``."""
    import types

    cls = type(module)
    own = getattr(cls, "etproof_method", "forward")
    if method == own:
        return module
    if getattr(cls, "etproof_wrapper", False):
        return module.model if method == "forward" else getattr(module.model, method)
    if method == "forward":  # a view's own class overrides forward; the model's is its base's
        return types.MethodType(cls.__mro__[1].forward, module)
    return getattr(module, method)


def mutated_buffers(edge_program) -> list[str]:
    """The buffers the lowered program's methods write, sorted, as the model names them
    (``edge_program``: an EdgeProgramManager)."""
    names = set()
    for method in edge_program.methods:
        sig = edge_program.exported_program(method).graph_signature
        for fqn in sig.buffers_to_mutate.values():
            names.add(fqn[len(_METHOD_PREFIX):] if fqn.startswith(_METHOD_PREFIX) else fqn)
    return sorted(names)


def initialize_buffers_pass(edge_program):
    """The to_executorch pass that gives every mutated buffer of ``edge_program`` its initial
    value in the program (ExecuTorch's InitializedMutableBufferPass: it marks a buffer whose
    placeholder name contains a pattern; the patterns here are the placeholders' own names), in
    every method that has it (one that only reads it too: with shared state it is planned
    memory there, read from the one allocation); None where the program mutates nothing."""
    placeholders = set()
    mutated = set()
    for method in edge_program.methods:
        mutated.update(edge_program.exported_program(method).graph_signature
                       .buffers_to_mutate.values())
    for method in edge_program.methods:
        by_target = edge_program.exported_program(method).graph_signature.inputs_to_buffers
        placeholders.update(p for p, fqn in by_target.items() if fqn in mutated)
    if not placeholders:
        return None
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass

    return InitializedMutableBufferPass(sorted(placeholders))


def shared_state_planning(planning):
    """The memory planning of a program with several methods that writes state: ExecuTorch's
    MemoryPlanningPass (``planning``'s settings kept) with ``share_mutable_buffers``, which
    places every mutable buffer once, in memory id 2, at one offset for every method that has
    it — as the model's methods share its buffers. By default each method plans its own copy
    and a write through one method is not seen by another (ExecuTorch 1.5.1,
    exir/passes/memory_planning_pass.py). The runtime must give every method the same arenas
    (Module's share_memory_arenas; the manifest's state.shared_across_methods says so)."""
    from executorch.exir.passes import MemoryPlanningPass

    if not isinstance(planning, MemoryPlanningPass):
        raise ExportError(f"the backend's memory planning ({type(planning).__name__}) is not "
                          "ExecuTorch's MemoryPlanningPass: its methods cannot share the "
                          "program's state", "export the methods as separate programs",
                          stage="serialize")
    return MemoryPlanningPass(
        memory_planning_algo=planning.memory_planning_algo,
        allow_lifetime_and_storage_overlap=planning.allow_lifetime_and_storage_overlap,
        alloc_graph_input=planning.alloc_graph_input,
        alloc_graph_output=planning.alloc_graph_output,
        alloc_mutable_buffers=True, share_mutable_buffers=True, alignment=planning.alignment)
