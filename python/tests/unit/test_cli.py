"""python -m etproof's command line: export through it, its usage errors and exit codes.

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_cli.py."""

import pytest

from etproof.cli.main import main
from etproof.export.pipeline import supported_pairs


def _export_err(capsys, out, *args) -> str:
    capsys.readouterr()
    assert main(["export", "tiny", *args, "--out", str(out)]) == 2
    return capsys.readouterr().err


def test_unknown_backend_or_recipe_is_a_usage_error_recorded_nowhere(tmp_path, capsys):
    out = tmp_path / "out"
    err = _export_err(capsys, out, "--backend", "xnnpak", "--recipe", "fp32")
    backends = sorted({b for b, _ in supported_pairs()})
    assert err.startswith("error [invalid-argument]: unknown backend 'xnnpak'; supported: "
                          + ", ".join(backends) + ", all\nremedy: did you mean 'xnnpack'?"), err
    err = _export_err(capsys, out, "--backend", "xnnpak")  # the backend is checked first
    assert "unknown backend 'xnnpak'" in err and "--recipe" not in err
    err = _export_err(capsys, out, "--backend", "xnnpack", "--recipe", "int2")
    assert err.startswith("error [invalid-argument]: unknown recipe 'int2'; supported: 8da4w, fp16, "
                          "fp32, int8-dynamic-per-channel, int8-static-per-channel, int8-weight-only, all\n"), err
    err = _export_err(capsys, out, "--backend", "xnnpack", "--recipe", "int8")
    assert "did you mean 'int8-dynamic-per-channel'?" in err
    err = _export_err(capsys, out, "--backend", "all", "--recipe", "fp23")
    assert "unknown recipe 'fp23'" in err and "did you mean 'fp32'?" in err
    # A backend ExecuTorch has, without a recipe: said about the backend, not the recipe.
    err = _export_err(capsys, out, "--backend", "qnn")
    assert err.startswith("error [invalid-argument]: backend 'qnn' (ExecuTorch has it) is "
                          "not exported by etproof yet; supported: " + ", ".join(backends)
                          + ", all"), err
    err = _export_err(capsys, out, "--backend", "xnnpack")
    assert "--recipe is required with --backend xnnpack" in err
    assert ("xnnpack recipes: 8da4w, fp32, int8-dynamic-per-channel, int8-static-per-channel, int8-weight-only, or all"
            in err)
    assert not out.exists()  # nothing written, no report, no directory
    # ...and an existing report is left exactly as it was.
    out.mkdir()
    (out / "export-report.json").write_text("{\"results\": []}")
    _export_err(capsys, out, "--backend", "xnnpak", "--recipe", "fp32")
    _export_err(capsys, out, "--backend", "portable", "--recipe", "fp33")
    assert (out / "export-report.json").read_text() == "{\"results\": []}"
    assert sorted(p.name for p in out.iterdir()) == ["export-report.json"]


def test_recipe_all_on_one_backend_exports_its_recipes():
    from etproof.cli.main import _pairs_for

    assert _pairs_for("xnnpack", "all") == [("xnnpack", "8da4w"), ("xnnpack", "fp32"),
                                            ("xnnpack", "int8-dynamic-per-channel"),
                                            ("xnnpack", "int8-static-per-channel"),
                                            ("xnnpack", "int8-weight-only")]
    assert _pairs_for("portable", "all") == [("portable", "fp32")]
    assert _pairs_for("coreml", "all") == [("coreml", "fp16"), ("coreml", "fp32"),
                                           ("coreml", "int8-static-per-channel"),
                                           ("coreml", "int8-weight-only")]
    # a recipe several backends have, through each one's own quantizer
    assert _pairs_for("all", "int8-static-per-channel") == [
        ("coreml", "int8-static-per-channel"), ("openvino", "int8-static-per-channel"),
        ("xnnpack", "int8-static-per-channel")]
    assert _pairs_for("all", "fp32") == [p for p in supported_pairs() if p[1] == "fp32"]
    assert ("webgpu", "fp32") in _pairs_for("all", "fp32")


def test_backend_and_recipe_take_comma_lists():
    """--backend and --recipe take comma lists: every supported pair of the two, in the table's
    order; an unknown name in a list is refused by name; a list with no supported pair is a usage
    error."""
    from etproof.cli.main import _pairs_for
    from etproof.errors import InvalidArgument

    assert _pairs_for("xnnpack,portable", "fp32") == [("portable", "fp32"), ("xnnpack", "fp32")]
    assert _pairs_for("xnnpack", "fp32,8da4w") == [("xnnpack", "8da4w"), ("xnnpack", "fp32")]
    assert ("coreml", "fp16") in _pairs_for("all", "fp32,fp16")
    for backend, recipe, says in (("xnnpack,xnnpak", "fp32", "unknown backend 'xnnpak'"),
                                  ("xnnpack", "fp32,int2", "unknown recipe 'int2'"),
                                  ("xnnpack,portable", "fp16", "no backend/recipe pair of "
                                   "--backend xnnpack,portable and --recipe fp16")):
        with pytest.raises(InvalidArgument) as e:
            _pairs_for(backend, recipe)
        assert says in str(e.value)
