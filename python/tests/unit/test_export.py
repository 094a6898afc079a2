"""export_model on the tiny model: the bundle, its manifest and goldens, and the refusals.

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_export.py."""

import pytest

from etproof.errors import ExportError, InvalidArgument
from etproof.export.pipeline import export_model, supported_pairs

from support import _only_bundles, _tiny_args, PRE


# --- refusals and failures leave nothing behind ----------------------------------------------------

def test_unknown_recipe_and_backend_refused(tmp_path):
    for backend, recipe in (("xnnpack", "int3"), ("qnn", "fp16"), ("portable", "int8-dynamic-per-channel")):
        with pytest.raises(InvalidArgument) as e:
            export_model(out_dir=tmp_path, **_tiny_args(backend=backend, recipe=recipe))
        assert e.value.stage == "export"
        for b, r in supported_pairs():
            assert f"{b}/{r}" in e.value.remedy
    assert _only_bundles(tmp_path) == []


@pytest.mark.parametrize("bad", ["a/b", "", "..", "sp ace"])
def test_invalid_name_refused(tmp_path, bad):
    with pytest.raises(InvalidArgument) as e:
        export_model(out_dir=tmp_path, **_tiny_args(name=bad))
    assert e.value.stage == "export"
    assert _only_bundles(tmp_path) == []


def test_wrong_output_count_fails_in_goldens(tmp_path):
    with pytest.raises(ExportError) as e:
        export_model(out_dir=tmp_path, **_tiny_args(output_names=["y", "z"]))
    assert e.value.stage == "goldens"
    assert _only_bundles(tmp_path) == []


def test_invalid_preprocessing_refused_before_export(tmp_path):
    bad = dict(PRE, input="nope")
    with pytest.raises(InvalidArgument) as e:
        export_model(out_dir=tmp_path, **_tiny_args(preprocessing=bad, layouts={"x": "nchw"}))
    assert "preprocessing.input" in e.value.cause
    with pytest.raises(InvalidArgument):  # preprocessing needs the input's layout
        export_model(out_dir=tmp_path, **_tiny_args(preprocessing=PRE))
    assert _only_bundles(tmp_path) == []
