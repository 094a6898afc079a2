"""A program that writes state (etproof.fixtures.stateful, exported into the test bundles'
``state/``): its manifest names the buffer, its goldens are each from the initial state, the
model is left as it was found, and the program written starts from the model's initial state."""

import numpy as np
import torch

from etproof.fixtures import stateful
from etproof.fixtures.testbundles import STATE_BUNDLES, STATE_DIR
from etproof.manifest import read_manifest


def _bundles(test_bundles):
    return [test_bundles / STATE_DIR / f"accumulator-{b}-{r}" for b, r in STATE_BUNDLES[0][2]]


def test_the_manifest_names_the_buffer_and_the_rule(test_bundles):
    for b in _bundles(test_bundles):
        assert read_manifest(b)["state"] == {"mutable_buffers": ["total"], "per_case": "fresh"}


def test_each_golden_is_the_fresh_models_answer(test_bundles):
    for b in _bundles(test_bundles):
        doc = read_manifest(b)
        gdir = b / f"{b.name}.goldens"
        for g in doc["goldens"]:
            fresh = stateful.spec()["model"]  # a new model: the initial state
            x = torch.from_numpy(np.load(gdir / g["inputs"]["x"]))
            with torch.no_grad():
                want = fresh(x).numpy()
            np.testing.assert_array_equal(np.load(gdir / g["outputs"]["y"]), want)


def test_the_export_leaves_the_model_as_it_found_it(tmp_path):
    from etproof.export.pipeline import export_model

    s = stateful.spec()
    model = s.pop("model")
    before = model.total.clone()
    export_model(model, name="acc", out_dir=tmp_path, backend="portable", recipe="fp32", **s)
    assert torch.equal(model.total, before)


def test_the_program_starts_from_the_models_initial_state(test_bundles):
    from executorch.runtime import Runtime

    for b in _bundles(test_bundles):
        doc = read_manifest(b)
        gdir = b / f"{b.name}.goldens"
        for g in doc["goldens"]:  # each on a program loaded afresh
            method = Runtime.get().load_program(b / f"{b.name}.pte").load_method("forward")
            x = torch.from_numpy(np.load(gdir / g["inputs"]["x"]))
            got = method.execute([x])[0].numpy()
            np.testing.assert_allclose(got, np.load(gdir / g["outputs"]["y"]), rtol=1e-5, atol=1e-6)


# --- golden cases that are sequences of calls: the small Llama with its KV cache ----------------

def _llama_bundles(test_bundles):
    """The float32 tinyllama bundles (the language-model recipes' are tested below)."""
    pairs = next(p for key, _, p in STATE_BUNDLES if key == "tinyllama")
    return [test_bundles / STATE_DIR / f"tinyllama-{b}-{r}" for b, r in pairs if r == "fp32"]


def _sequences(doc):
    """{case: [golden entry, ...] in step order}"""
    out = {}
    for g in doc["goldens"]:
        out.setdefault(g["sequence"]["case"], []).append(g)
    return {c: sorted(gs, key=lambda g: g["sequence"]["step"]) for c, gs in out.items()}


def _inputs(gdir, g):
    return [torch.from_numpy(np.load(gdir / g["inputs"][n])) for n in ("tokens", "input_pos")]


def test_the_manifest_lists_each_sequences_steps_and_the_kv_cache(test_bundles):
    from etproof.goldens import llama

    for b in _llama_bundles(test_bundles):
        doc = read_manifest(b)
        assert doc["state"] == {"mutable_buffers": [f"m.layers.{i}.attention.kv_cache.{kv}_cache"
                                                    for i in (0, 1) for kv in ("k", "v")],
                                "per_case": "fresh"}
        assert doc["greedy"] == {"output": "logits"}
        seqs = _sequences(doc)
        assert {c: len(gs) for c, gs in seqs.items()} == {c: 1 + n for c, _, n in llama.SEQUENCES}
        for case, gs in seqs.items():
            assert [g["id"] for g in gs] == [f"{case}.step{k}" for k in range(len(gs))]


def test_each_steps_golden_is_the_eager_model_after_the_steps_before(test_bundles):
    from etproof.goldens import llama

    b = _llama_bundles(test_bundles)[0]
    gdir = b / f"{b.name}.goldens"
    for case, gs in _sequences(read_manifest(b)).items():
        model = llama.tiny_llama()  # the initial state, for each sequence
        for k, g in enumerate(gs):
            tokens, pos = _inputs(gdir, g)
            with torch.no_grad():
                want = model(tokens, pos).numpy()
            np.testing.assert_array_equal(np.load(gdir / g["outputs"]["logits"]), want)
            if k:  # teacher-forced: the token fed is the eager model's choice after the step before
                before = np.load(gdir / gs[k - 1]["outputs"]["logits"])
                assert tokens.item() == int(before[0, -1].argmax())


def test_the_program_replays_a_sequence_on_one_load_and_only_so(test_bundles):
    from executorch.runtime import Runtime

    for b in _llama_bundles(test_bundles):
        gdir = b / f"{b.name}.goldens"
        for case, gs in _sequences(read_manifest(b)).items():
            method = Runtime.get().load_program(b / f"{b.name}.pte").load_method("forward")
            for g in gs:  # in order, the cache carried
                got = method.execute(_inputs(gdir, g))[0].numpy()
                np.testing.assert_allclose(got, np.load(gdir / g["outputs"]["logits"]),
                                           rtol=1e-4, atol=1e-5)
            # a later step on a program loaded afresh (an empty cache) is another answer: the
            # steps' state is what the goldens hold
            last = gs[-1]
            alone = Runtime.get().load_program(b / f"{b.name}.pte").load_method("forward")
            got = alone.execute(_inputs(gdir, last))[0].numpy()
            assert np.abs(got - np.load(gdir / last["outputs"]["logits"])).max() > 0.1


# --- the language-model recipes: 8da4w and int8 weight-only (torchao's quantize_) ---------------

def test_the_llm_recipes_record_their_quantization_and_their_torchao_emulation(test_bundles):
    for recipe, group in (("8da4w", 32), ("int8-weight-only", None)):
        doc = read_manifest(test_bundles / STATE_DIR / f"tinyllama-xnnpack-{recipe}")
        q = doc["quantization"]
        assert q.get("group_size") == group, q
        assert q["skipped"] == [] and q["quantizer"].startswith(
            "Int8DynamicActivationIntxWeightConfig" if group else "IntxWeightOnlyConfig")
        ref = doc["references"][recipe]
        assert ref["captured"] and ref["emulates"] == ("xnnpack-qb4w" if group else "torchao"), ref
        # the export half ran the program on every step against the emulation, and (this small
        # model: no rounding tie compounds) it matched to float32 rounding
        assert ref["program_at_export"]["cases"] == len(doc["goldens"])
        assert ref["program_at_export"]["matched"], ref["program_at_export"]
        if recipe == "8da4w":  # int4 weights in XNNPACK's delegate: the linears delegated
            linear = next(o for o in doc["delegation"]["by_operator"] if o["op"] == "aten_linear_default")
            assert linear["non_delegated"] == 0 and linear["delegated"] > 0
        else:  # XNNPACK has no weight-only linear: the matmuls run on portable kernels
            assert "aten::mm.out" in doc["operators"]


def test_the_emulation_is_the_torchao_model_and_costs_what_the_recipe_costs(test_bundles):
    """Each step's recipe reference is the torchao-quantized model (its int4 group scales in
    bfloat16) run on the steps before it; it is close to the float32 golden, not equal (the
    recipe's cost)."""
    b = test_bundles / STATE_DIR / "tinyllama-xnnpack-8da4w"
    doc = read_manifest(b)
    gdir = b / f"{b.name}.goldens"
    for case, gs in _sequences(doc).items():
        for g in gs:
            emu = np.load(gdir / g["references"]["8da4w"]["logits"]["file"])
            gold = np.load(gdir / g["outputs"]["logits"])
            err = np.abs(emu - gold).max() / np.abs(gold).max()
            assert 1e-4 < err < 0.3, (case, g["id"], err)


# --- sequences whose steps cross methods sharing the program's state ----------------------------

def test_a_sequence_across_methods_is_the_eager_models_calls_in_order(test_bundles):
    """accumulator_chain: forward, read, forward, read on one model; each step's golden is what
    that call answers after the calls before it (through both methods), and the manifest shares
    the state across methods and lists each step under the method it runs through."""
    pairs = next(p for key, _, p in STATE_BUNDLES if key == "accumulator_chain")
    for b, r in pairs:
        bundle = test_bundles / STATE_DIR / f"accumulator_chain-{b}-{r}"
        doc = read_manifest(bundle)
        assert doc["state"] == {"mutable_buffers": ["total"], "per_case": "fresh",
                                "shared_across_methods": True}
        gdir = bundle / f"{bundle.name}.goldens"
        steps = sorted(((m["name"], g) for m in doc["methods"] for g in m["goldens"]
                        if g.get("sequence", {}).get("case") == "chain"),
                       key=lambda mg: mg[1]["sequence"]["step"])
        assert [m for m, _ in steps] == ["forward", "read", "forward", "read"]
        model = stateful.chain_spec()["model"]  # a new model: the initial state
        for method, g in steps:
            x = torch.from_numpy(np.load(gdir / g["inputs"]["x"]))
            with torch.no_grad():
                want = getattr(model, method)(x).numpy()
            np.testing.assert_array_equal(np.load(gdir / g["outputs"]["y"]), want)


def test_the_program_shares_its_state_across_methods(test_bundles):
    """The xnnpack program in ExecuTorch's Python runtime (every method loaded first, one set of
    arenas): read after forward sees what forward wrote, as the golden does."""
    from executorch.runtime import Runtime

    bundle = test_bundles / STATE_DIR / "accumulator_chain-xnnpack-fp32"
    doc = read_manifest(bundle)
    gdir = bundle / f"{bundle.name}.goldens"
    by_step = {g["sequence"]["step"]: (m["name"], g) for m in doc["methods"] for g in m["goldens"]
               if "sequence" in g}
    program = Runtime.get().load_program(bundle / f"{bundle.name}.pte")
    methods = {n: program.load_method(n) for n in sorted(program.method_names)}
    for k in sorted(by_step):
        name, g = by_step[k]
        got = methods[name].execute([torch.from_numpy(np.load(gdir / g["inputs"]["x"]))])[0]
        np.testing.assert_allclose(got.numpy(), np.load(gdir / g["outputs"]["y"]), rtol=1e-5,
                                   atol=1e-6)
