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


def run_fresh(module, calls, carries=()) -> list:
    """``[module(*inputs) for inputs in calls]``, each call from the state ``module`` has now,
    which it has again afterwards — except a call whose ``carries[i]`` is true (a sequence
    case's later step, GoldenCase.carries), which runs on the state the call before it left."""
    state = InitialState(module)
    results = []
    try:
        for i, inputs in enumerate(calls):
            if not (i < len(carries) and carries[i]):
                state.restore()
            results.append(module(*inputs))
    finally:
        state.restore()
    return results


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
    placeholder name contains a pattern; the patterns here are the placeholders' own names);
    None where the program mutates nothing."""
    placeholders = set()
    for method in edge_program.methods:
        ep = edge_program.exported_program(method)
        mutated = set(ep.graph_signature.buffers_to_mutate.values())
        by_target = ep.graph_signature.inputs_to_buffers
        placeholders.update(p for p, fqn in by_target.items() if fqn in mutated)
    if not placeholders:
        return None
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass

    return InitializedMutableBufferPass(sorted(placeholders))
