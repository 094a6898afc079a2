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
