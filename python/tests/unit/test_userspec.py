"""The MODULE:FUNCTION contract: documented (--help, README), checked once, all problems at once.

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_userspec.py."""

from etproof.contract import userspec
from etproof.cli.main import main

from conftest import REPO
from support import _help


def test_help_documents_the_contract(capsys):
    text = _help(capsys)
    for needle in ("takes no", "returns a dict", "model ", "torch.nn.Module", "example_inputs",
                   "tuple of tensors", "input_names", "output_names", "golden_inputs",
                   "(case_id, data, origin, tensors)", '"real" for real-domain inputs such as '
                   "photos or sentences", '"synthetic" for generated ones', "origin ",
                   "name ", "default: the", "function's name", "layouts", "preprocessing",
                   "labels", userspec.EXAMPLE.splitlines()[3]):
        assert needle in text, needle
    assert userspec.EXAMPLE in text


def test_readme_shows_the_same_contract_and_example():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert userspec.EXAMPLE in readme
    para = readme[readme.index("`MODEL` is"):readme.index("```python")]
    for needle in ("no arguments", "torch.nn.Module", "example_inputs", "input_names",
                   "output_names", "golden_inputs", "(case_id, data, origin, tensors)",
                   '`"real"` for real-domain', '`"synthetic"` for generated', "`origin`",
                   "`name`", "function's name", "`layouts`", "`preprocessing`", "`labels`",
                   "--help"):
        assert needle in " ".join(para.split()), needle


def test_all_problems_listed_at_once_pointing_to_help(mod, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export", f"{mod}:wrong", "--backend", "portable", "--recipe", "fp32",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{mod}:wrong() returned a dict with 6 problems" in err
    for needle in ("missing key 'example_inputs'", "missing key 'output_names'",
                   "unknown key 'example_input' (did you mean 'example_inputs'?)",
                   "golden case 'a': data must be 'real' or 'synthetic' ('real' for real-domain "
                   "inputs", "golden case 'a': origin must say where the inputs came from",
                   "layouts: 'x' must be 'nchw' or 'nhwc', got 'nhcw'"):
        assert needle in err, needle
    assert "remedy: see `python -m etproof export --help`" in err
    assert not out.exists()
    assert main(["export", f"{mod}:wrong_shapes", "--backend", "portable", "--recipe", "fp32",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "2 problems" in err
    assert "golden case 'a': input 'x' must be torch.float32 [1, 4] like the example input, " \
           "got torch.float32 [1, 5]" in err
    assert "golden_inputs[1]: case_id must be a name" in err
    assert not out.exists()


def test_the_output_count_is_checked_with_the_rest_before_anything_is_written(mod, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export", f"{mod}:wrong_outputs", "--backend", "all", "--recipe", "all",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{mod}:wrong_outputs() returned a dict with 2 problems" in err, err
    assert "output_names has 1 name(s) ['y'] but the model returns 2 value(s) on example_inputs" in err
    assert "golden case 'ones': origin must say where the inputs came from" in err
    assert err.count("output_names has") == 1  # once for the model, not once per pair
    assert not out.exists()


def test_problems_agrees_with_export_model():
    import torch

    from etproof.fixtures import tiny

    assert userspec.problems(tiny.spec()) == []
    assert userspec.problems([1]) == ["FUNCTION must return a dict, not list"]
    # A problem only export_model's own checks find still comes back, as one line.
    x = torch.ones(1, 4, dtype=torch.complex64)
    found = userspec.problems({"model": torch.nn.Identity(), "example_inputs": (x,),
                               "input_names": ["x"], "output_names": ["y"],
                               "golden_inputs": [("c", "synthetic", "torch.ones", (x,))]})
    assert len(found) == 1 and "complex64" in found[0], found
