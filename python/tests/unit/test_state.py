"""etproof.export.state (unit): the initial state is put back after an in-place update, a rebound
buffer and a resized one, and run_fresh gives every call the same starting state."""

import pytest
import torch
from torch import nn

from etproof.export.state import InitialState, run_fresh


class Writes(nn.Module):
    """forward writes its buffers three ways: in place, by rebinding, and by resizing."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.full((1, 3), 2.0))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("history", torch.zeros(0, 3))
        self.inner = nn.Module()
        self.inner.register_buffer("scale", torch.ones(3))

    def forward(self, x):
        self.total.add_(x)
        self.steps = self.steps + 1                       # rebound to a new tensor
        self.history = torch.cat([self.history, x])       # grows: another shape
        self.inner.scale.mul_(2)
        return self.total * self.inner.scale


def test_restore_undoes_in_place_rebound_and_resized_writes():
    m = Writes()
    original_steps = m.steps
    state = InitialState(m)
    for _ in range(3):
        m(torch.ones(1, 3))
    assert m.total.tolist() == [[5.0, 5.0, 5.0]] and m.steps.item() == 3 and m.history.shape == (3, 3)
    state.restore()
    assert m.total.tolist() == [[2.0, 2.0, 2.0]]
    assert m.steps is original_steps and m.steps.item() == 0
    assert m.history.shape == (0, 3)
    assert m.inner.scale.tolist() == [1.0, 1.0, 1.0]


def test_run_fresh_starts_every_call_from_the_same_state_and_keeps_it():
    m = Writes()
    x = torch.tensor([[1.0, 2.0, 3.0]])
    outs = run_fresh(m, [(x,), (x,), (x,)])
    assert all(torch.equal(o, outs[0]) for o in outs)
    assert outs[0].tolist() == [[6.0, 8.0, 10.0]]  # (2 + x) * 2, once
    assert m.total.tolist() == [[2.0, 2.0, 2.0]] and m.steps.item() == 0


def test_a_model_without_buffers_is_left_alone():
    m = nn.Linear(3, 2)
    w = m.weight.detach().clone()
    outs = run_fresh(m, [(torch.ones(1, 3),)] * 2)
    assert torch.equal(outs[0], outs[1]) and torch.equal(m.weight, w)


def test_run_fresh_carries_the_state_into_a_sequences_later_steps():
    m = Writes()
    x = torch.tensor([[1.0, 2.0, 3.0]])
    # a single call, then a sequence of three steps: the steps carry, the single call does not
    outs = run_fresh(m, [(x,), (x,), (x,), (x,)], [False, False, True, True])
    assert outs[0].tolist() == outs[1].tolist() == [[6.0, 8.0, 10.0]]
    assert outs[2].tolist() == [[16.0, 24.0, 32.0]]  # (2 + 2x) * 4: the step before's state
    assert outs[3].tolist() == [[40.0, 64.0, 88.0]]  # (2 + 3x) * 8
    assert m.total.tolist() == [[2.0, 2.0, 2.0]] and m.steps.item() == 0


def _one_input_arguments(golden_inputs, **kw):
    from etproof.contract.arguments import check_export_arguments

    x = torch.zeros(1, 3)
    args, _ = check_export_arguments(Writes(), (x,), name="w", backend="portable", recipe="fp32",
                                     input_names=["x"], output_names=["y"],
                                     golden_inputs=golden_inputs, **kw)
    return args


def test_a_sequence_case_becomes_its_steps_in_order():
    x = torch.zeros(1, 3)
    args = _one_input_arguments([("one", "synthetic", "zeros", (x,)),
                                 ("chat", "synthetic", "zeros", {"steps": [(x,), ("forward", (x,)), x]})])
    assert [(c.id, c.sequence, c.carries) for c in args.cases] == [
        ("one", None, False), ("chat.step0", ("chat", 0), False), ("chat.step1", ("chat", 1), True),
        ("chat.step2", ("chat", 2), True)]
    assert args.cases[2].method == "forward" and args.cases[1].method is None


@pytest.mark.parametrize("steps, says", [
    ({"steps": []}, "at least one step"),
    ({"stops": [(torch.zeros(1, 3),)]}, "['stops']"),
    ({"steps": [(torch.zeros(1, 4),)]}, "'chat.step0': input 'x' must be a torch.float32 tensor of shape [1, 3]"),
])
def test_a_bad_sequence_case_is_refused_by_name(steps, says):
    from etproof.errors import InvalidArgument

    with pytest.raises(InvalidArgument) as e:
        _one_input_arguments([("chat", "synthetic", "zeros", steps)])
    assert says in str(e.value)


def test_a_step_naming_a_method_the_program_lacks_is_refused():
    from etproof.contract.arguments import ExportOptions
    from etproof.contract.program import check_methods
    from etproof.errors import InvalidArgument

    x = torch.zeros(1, 3)
    with pytest.raises(InvalidArgument) as e:
        check_methods(Writes(), (x,), "w", "portable", "fp32", ["x"], ["y"],
                      [("chat", "synthetic", "zeros", {"steps": [(x,), ("decode", (x,))]})],
                      ExportOptions())
    assert ("golden case 'chat' step 1 names method 'decode', which the program does not have "
            "(its methods: ['forward'])") in str(e.value)


class PrefillDecode(nn.Module):
    """Two methods on one buffer: prefill writes a prompt's sum into ``cache``, decode adds a
    token to it and returns it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.full((1, 3), 1.0))

    def forward(self, x):
        return self.prefill(x)

    def prefill(self, x):
        self.cache.add_(x.sum(0, keepdim=True))
        return self.cache * 1.0

    def decode(self, t):
        self.cache.add_(t)
        return self.cache * 2.0


def _prefill_decode_methods(recipe="fp32", backend="portable", decode_cases=()):
    from etproof.contract.arguments import ExportOptions
    from etproof.contract.program import check_methods

    p, t = torch.ones(2, 3), torch.full((1, 3), 0.5)
    chat = ("chat", "synthetic", "ones", {"steps": [(p,), ("decode", (t,)), ("decode", (t,)),
                                                     ("prefill", (p,))]})
    methods = {"prefill": {"example_inputs": (p,), "input_names": ["p"], "output_names": ["c"],
                           "golden_inputs": [chat]},
               "decode": {"example_inputs": (t,), "input_names": ["t"], "output_names": ["d"],
                          "golden_inputs": list(decode_cases)}}
    return check_methods(PrefillDecode(), None, "pd", backend, recipe, None, None, None,
                         ExportOptions(methods=methods))


def test_steps_across_methods_move_to_their_method_with_the_steps_before_them():
    meths = {m.name: m for m in _prefill_decode_methods()}
    assert [c.id for c in meths["prefill"].args.cases] == ["chat.step0", "chat.step3"]
    assert [c.id for c in meths["decode"].args.cases] == ["chat.step1", "chat.step2"]
    step1, step2 = meths["decode"].args.cases
    step3 = meths["prefill"].args.cases[1]
    # the step before ran through another method: replayed from the initial state first
    assert [m for m, _ in step1.prefix] == ["prefill"] and step2.entry is True
    assert [m for m, _ in step3.prefix] == ["prefill", "decode", "decode"]


def test_run_fresh_replays_the_steps_before_through_the_other_method():
    meths = {m.name: m for m in _prefill_decode_methods()}
    pre, dec = meths["prefill"].module, meths["decode"].module
    eager = PrefillDecode()
    p, t = torch.ones(2, 3), torch.full((1, 3), 0.5)
    expected = [eager.prefill(p), eager.decode(t), eager.decode(t), eager.prefill(p)]
    got_dec = run_fresh(dec, [c.inputs for c in meths["decode"].args.cases],
                        [c.entry for c in meths["decode"].args.cases])
    got_pre = run_fresh(pre, [c.inputs for c in meths["prefill"].args.cases],
                        [c.entry for c in meths["prefill"].args.cases])
    assert torch.equal(got_pre[0], expected[0]) and torch.equal(got_pre[1], expected[3])
    assert torch.equal(got_dec[0], expected[1]) and torch.equal(got_dec[1], expected[2])
    assert got_dec[1].tolist() == [[8.0, 8.0, 8.0]]  # (1 + 2 + 0.5 + 0.5) * 2
    assert pre.cache.tolist() == [[1.0, 1.0, 1.0]]  # the initial state, kept


def test_a_pt2e_recipe_refuses_a_sequence_across_methods():
    from etproof.errors import InvalidArgument

    with pytest.raises(InvalidArgument) as e:
        _prefill_decode_methods("int8-static-per-channel", "xnnpack")
    assert "sequence case 'chat' runs through methods ['decode', 'prefill']" in str(e.value)
    assert "8da4w" in e.value.remedy


def test_a_cross_method_step_is_checked_against_its_methods_inputs():
    from etproof.contract.arguments import ExportOptions
    from etproof.contract.program import check_methods
    from etproof.errors import InvalidArgument

    p = torch.ones(2, 3)
    methods = {"prefill": {"example_inputs": (p,), "input_names": ["p"], "output_names": ["c"],
                           "golden_inputs": [("chat", "synthetic", "ones",
                                              {"steps": [(p,), ("decode", (p,))]})]},
               "decode": {"example_inputs": (torch.ones(1, 3),), "input_names": ["t"],
                          "output_names": ["d"], "golden_inputs": []}}
    with pytest.raises(InvalidArgument) as e:
        check_methods(PrefillDecode(), None, "pd", "portable", "fp32", None, None, None,
                      ExportOptions(methods=methods))
    assert ("method 'decode': golden case 'chat.step1': input 't' must be a torch.float32 tensor "
            "of shape [1, 3]") in str(e.value)


def test_taps_are_refused_with_a_sequence_case():
    from etproof.errors import InvalidArgument
    from etproof.export.taps import check_taps

    with pytest.raises(InvalidArgument) as e:
        check_taps(True, several=False, dynamic_shapes=None, sequences=True)
    assert "a golden case is a sequence of calls" in str(e.value)


def _sequence_manifest(steps):
    import copy
    import json

    from conftest import FIXTURE

    doc = json.loads(FIXTURE.read_text())
    doc = copy.deepcopy(doc)
    for i, (case, k) in enumerate(steps):
        doc["goldens"][i]["sequence"] = {"case": case, "step": k}
    return doc


def test_the_manifest_check_refuses_a_sequence_with_a_gap_or_a_repeated_step():
    from etproof.errors import ManifestError
    from etproof.manifest import validate

    validate(_sequence_manifest([("chat", 0), ("chat", 1)]))
    with pytest.raises(ManifestError) as e:
        validate(_sequence_manifest([("chat", 1), ("chat", 2)]))
    assert "sequence 'chat' has step 2 but not step 0" in str(e.value)
    with pytest.raises(ManifestError) as e:
        validate(_sequence_manifest([("chat", 0), ("chat", 0)]))
    assert "goldens[1].sequence.step" in str(e.value) and "repeats step 0 of sequence 'chat'" in str(e.value)


def test_the_llm_recipes_refuse_a_model_without_a_linear_they_can_quantize():
    from etproof.errors import NothingToQuantize
    from etproof.export.quantize import quantize_module

    x = torch.zeros(1, 3)
    with pytest.raises(NothingToQuantize) as e:
        quantize_module(Writes(), "torchao-int8-weight-only", (x,))
    assert "has no nn.Linear" in str(e.value)
    with pytest.raises(NothingToQuantize) as e:  # 8 input features: no group of 32 fits
        quantize_module(nn.Sequential(nn.Linear(8, 4)), "torchao-8da4w", (torch.zeros(1, 8),))
    assert "none whose input features are a multiple of 32" in str(e.value)


def _greedy_methods(golden_inputs, **opts):
    from etproof.contract.arguments import ExportOptions
    from etproof.contract.program import check_methods

    x = torch.zeros(1, 3)
    return check_methods(Writes(), (x,), "w", "portable", "fp32", ["x"], ["y"], golden_inputs,
                         ExportOptions(**opts))


@pytest.mark.parametrize("golden, opts, says", [
    ([("one", "synthetic", "zeros", (torch.zeros(1, 3),))], {"greedy_output": "y"},
     "no golden case is a sequence of calls"),
    ([("chat", "synthetic", "zeros", {"steps": [(torch.zeros(1, 3),)]})], {"greedy_output": "z"},
     "greedy_output 'z' is not an output of method 'forward'"),
    ([("chat", "synthetic", "zeros", {"steps": [(torch.zeros(1, 3),)]})],
     {"budget": {"min_greedy_tokens": 2}}, "budget min_greedy_tokens without greedy_output"),
    ([("chat", "synthetic", "zeros", {"steps": [(torch.zeros(1, 3),)] * 2})],
     {"greedy_output": "y", "budget": {"min_greedy_tokens": 3}},
     "sequence case(s) chat take fewer tokens (one per step)"),
])
def test_greedy_output_and_its_budget_are_checked_before_anything_runs(golden, opts, says):
    from etproof.errors import InvalidArgument

    with pytest.raises(InvalidArgument) as e:
        _greedy_methods(golden, **opts)
    assert says in str(e.value)
    ok = [("chat", "synthetic", "zeros", {"steps": [(torch.zeros(1, 3),)] * 3})]
    assert _greedy_methods(ok, greedy_output="y", budget={"min_greedy_tokens": 3})


def test_the_manifest_check_refuses_greedy_naming_no_logits():
    from etproof.errors import ManifestError
    from etproof.manifest import validate

    doc = _sequence_manifest([("chat", 0), ("chat", 1)])
    out = doc["outputs"][0]
    doc["greedy"] = {"output": out["name"]}
    if out["dtype"].startswith("float") and len(out["shape"]) >= 2:
        validate(doc)
    doc["greedy"] = {"output": "nothing"}
    with pytest.raises(ManifestError) as e:
        validate(doc)
    assert "greedy.output" in str(e.value) and "names no output ('nothing')" in str(e.value)
