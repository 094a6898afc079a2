"""The MODULE:FUNCTION contract: documented (--help, README), checked once, all problems at once.

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_userspec.py."""

import json

from etproof.cli.main import main

from support import _help


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


def test_backend_all_says_each_error_once(mod, tmp_path, capsys):
    out = tmp_path / "out"
    for func, needle in (("wrong", "missing key 'output_names'"), ("boom", "kaput")):
        capsys.readouterr()
        assert main(["export", f"{mod}:{func}", "--backend", "all", "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert (captured.out + captured.err).count(needle) == 1, captured
        assert captured.err.count("error [") == 1, captured.err
        assert not out.exists()  # checked before any column
    # A failure of every column (torch.export refuses the model): one error line, all columns;
    # exit 1 (the export ran; its answer is a failure), not 2 (a usage error)
    assert main(["export", f"{mod}:untraceable", "--backend", "all", "--out", str(out)]) == 1
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


def test_an_export_of_every_recipe_a_ci_script_runs_exits_0(mod, tmp_path, capsys):
    """A model without linear or conv layers: its int8 recipes are refused (nothing to quantize:
    export-refused, never a failure), its fp32 columns written; exit 0, so `export --backend
    B,... --recipe all` is a step a CI script can run (docs/errors.md, "Exit codes"). The
    backends listed (a comma list) keep the test to the columns this machine exports fast."""
    out = tmp_path / "out"
    assert main(["export", f"{mod}:no_linear", "--backend", "portable,xnnpack", "--recipe", "all",
                 "--out", str(out)]) == 0
    report = {(r["backend"], r["recipe"]): r
              for r in json.loads((out / "export-report.json").read_text())["results"]}
    assert set(report) == {("portable", "fp32"), ("xnnpack", "fp32"),
                           ("xnnpack", "int8-dynamic-per-channel"),
                           ("xnnpack", "int8-static-per-channel"), ("xnnpack", "8da4w"),
                           ("xnnpack", "int8-weight-only")}
    for pair, r in report.items():
        assert r["status"] == ("exported" if pair[1] == "fp32" else "export-refused"), r
    assert "4 refused, 0 failed" in capsys.readouterr().out
