"""The MODULE:FUNCTION contract: documented (--help, README), checked once, all problems at once."""

import json

import pytest

from etproof.contract import userspec
from etproof.cli.main import main

from conftest import REPO

MODULE = '''\
import torch

class Untraceable(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.export refuses it
            return x * 2
        return x - 1

def _spec(model):
    x = torch.ones(1, 4)
    return {"model": model, "example_inputs": (x,), "input_names": ["x"],
            "output_names": ["y"], "golden_inputs": [("ones", "synthetic", "torch.ones", (x,))]}

def make_model():
    return _spec(torch.nn.Linear(4, 2).eval())

def named():
    return dict(_spec(torch.nn.Linear(4, 2).eval()), name="lin")

def untraceable():
    return _spec(Untraceable())

def wrong():
    x = torch.ones(1, 4)
    return {"model": torch.nn.Linear(4, 2), "example_input": (x,), "input_names": ["x"],
            "golden_inputs": [("a", "random", "", (torch.ones(1, 5),))], "layouts": {"x": "nhcw"}}

def wrong_shapes():
    d = _spec(torch.nn.Linear(4, 2))
    d["golden_inputs"] = [("a", "real", "photo.png", (torch.ones(1, 5),)),
                          ("b c", "synthetic", "zeros", (torch.zeros(1, 4),))]
    return d

def boom():
    raise RuntimeError("kaput")
'''


@pytest.fixture
def mod(tmp_path):
    f = tmp_path / "user_model.py"
    f.write_text(MODULE)
    return f


def _help(capsys) -> str:
    capsys.readouterr()
    assert main(["export", "--help"]) == 0
    return capsys.readouterr().out


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


def test_the_documented_example_exports(tmp_path, capsys, monkeypatch):
    text = _help(capsys)
    example = text[text.index("Example:\n\n") + len("Example:\n\n"):]
    assert len(example.strip().splitlines()) <= 11
    (tmp_path / "my_model.py").write_text(example)
    monkeypatch.chdir(tmp_path)
    assert main(["export", "my_model.py:make_model", "--backend", "portable", "--recipe", "fp32",
                 "--out", "out"]) == 0
    assert (tmp_path / "out" / "linear-portable-fp32" / "linear-portable-fp32.pte").is_file()
    assert "bundle name" not in capsys.readouterr().out  # 'name' given: nothing to explain


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


def test_backend_all_says_each_error_once(mod, tmp_path, capsys):
    out = tmp_path / "out"
    for func, needle in (("wrong", "missing key 'output_names'"), ("boom", "kaput")):
        capsys.readouterr()
        assert main(["export", f"{mod}:{func}", "--backend", "all", "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert (captured.out + captured.err).count(needle) == 1, captured
        assert captured.err.count("error [") == 1, captured.err
        assert not out.exists()  # checked before any column
    # A failure of every column (torch.export refuses the model): one error line, all columns.
    assert main(["export", f"{mod}:untraceable", "--backend", "all", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("error [")]
    from etproof.export.pipeline import supported_pairs

    columns = ", ".join(f"{b}/{r}" for b, r in supported_pairs())
    assert errors == [errors[0]] and errors[0].startswith(
        f"error [export]: {columns}: export failed: "), captured.err
    assert "GuardOnDataDependentSymNode" not in captured.out  # the reason is said once, on stderr
    report = json.loads((out / "export-report.json").read_text())["results"]
    assert [r["status"] for r in report] == ["export-failed"] * len(supported_pairs())


def test_bundle_name_from_the_function_name_is_said(mod, tmp_path, capsys):
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["export", f"{mod}:make_model", "--backend", "portable", "--recipe", "fp32",
                 "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert ("bundle name: make_model-portable-fp32 (from the function name; set 'name' to "
            "change it)\n") in stdout
    doc = json.loads((out / "make_model-portable-fp32" /
                      "make_model-portable-fp32.etproof.json").read_text())
    assert doc["model"] == "make_model"
    assert main(["export", f"{mod}:named", "--backend", "portable", "--recipe", "fp32",
                 "--out", str(out)]) == 0
    assert "bundle name" not in capsys.readouterr().out
    doc = json.loads((out / "lin-portable-fp32" / "lin-portable-fp32.etproof.json").read_text())
    assert doc["model"] == "lin"
    assert main(["export", f"{mod}:make_model", "--backend", "portable", "--recipe", "fp32",
                 "--out", str(out), "--name", "given"]) == 0
    assert "bundle name" not in capsys.readouterr().out
    assert (out / "given").is_dir()


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
