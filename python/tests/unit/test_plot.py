"""etproof.cli.plot: `etproof attribute --plot`'s picture (SQNR against depth), drawn by matplotlib.

The end-to-end path (the C++ `attribute --plot` on a real tapped twin) is cpp/tests/integration/attribute_test.cpp;
here, the drawing and its refusals on reports shaped as `etproof attribute --json` writes them.
"""

from __future__ import annotations

import json

import pytest

from etproof.errors import InvalidArgument
from etproof.cli.plot import FLOAT32_RESOLUTION_DB, load_attributions, plot_attribution


def _layer(i: int, module: str, sqnr, floor) -> dict:
    return {"index": i, "op": "aten.linear.default", "module_path": module, "output": f"tap.{i:03d}",
            "min_sqnr_db": floor, "report": {"sqnr_db": sqnr, "passed": sqnr == "inf" or sqnr >= floor}}


def _attribution(backend: str, sqnrs: list, floor: float, earliest) -> dict:
    return {"bundle": f"m-{backend}-fp32", "model": "m", "backend": backend, "recipe": "fp32",
            "precision": "float32", "earliest_drift": earliest, "culprit": earliest is not None,
            "layers": [_layer(i, f"layer{i}", s, floor) for i, s in enumerate(sqnrs)]}


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_every_column_is_drawn_with_its_bound_and_earliest_drift(tmp_path, suffix):
    reports = tmp_path / "a.json"
    reports.write_text(json.dumps([_attribution("portable", ["inf", 140.0, 130.0], 87.5, None),
                                   _attribution("xnnpack", ["inf", 70.0, 69.0], 87.5, 1)]))
    out = plot_attribution(load_attributions([reports]), tmp_path / f"p{suffix}")
    assert out.exists() and out.stat().st_size > 1000
    if suffix == ".svg":
        svg = out.read_text()
        for text in ("portable/fp32", "xnnpack/fp32", "bound", "layer1 (culprit)",
                     f"identical taps drawn at {FLOAT32_RESOLUTION_DB}"):
            assert text in svg, text
    else:
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_another_suffix_is_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(InvalidArgument, match=r"\.svg or \.png"):
        plot_attribution([_attribution("portable", [100.0], 87.5, None)], tmp_path / "p.pdf")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content, match", [
    ("not json", "cannot read"),
    (json.dumps({"bundle": "x"}), "not an attribution"),
    (json.dumps([]), "no attribution"),
])
def test_a_file_that_is_not_an_attribution_is_refused_by_name(tmp_path, content, match):
    f = tmp_path / "r.json"
    f.write_text(content)
    with pytest.raises(InvalidArgument, match=match) as e:
        load_attributions([f])
    assert "etproof attribute --json" in e.value.remedy
