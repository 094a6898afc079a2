"""The tapped twin (issue 13 §1, etproof.export.taps, docs/manifest.md "The tapped twin"): real exports
of the attribution model (etproof.fixtures.attribution), each bundle exported once per module.

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_taps.py."""

from __future__ import annotations

import pytest

from etproof.cli.main import build_parser
from etproof.errors import InvalidArgument
from etproof.export.pipeline import export_model
from etproof.fixtures import attribution
from etproof.export.taps import spaced_indices


def test_spaced_indices():
    assert spaced_indices(5, 10) == [0, 1, 2, 3, 4]
    assert spaced_indices(5, 1) == [4]
    for count in (2, 7, 300):
        for n in range(1, count):
            idx = spaced_indices(count, n)
            assert len(idx) == n and idx[-1] == count - 1 and idx == sorted(set(idx))
            assert n == 1 or idx[0] == 0


@pytest.mark.parametrize("taps, extra, said", [
    (True, {"dynamic_shapes": ({0: "batch"},)}, "dynamic_shapes"),
    (0, {}, "taps must be"),
    (-3, {}, "taps must be"),
    (1.5, {}, "taps must be"),
])
def test_refused_before_anything_is_written(tmp_path, taps, extra, said):
    out = tmp_path / "out"
    with pytest.raises(InvalidArgument) as ei:
        export_model(name="refused", out_dir=out, backend="xnnpack", recipe="fp32", taps=taps,
                     **attribution.spec(), **extra)
    assert ei.value.stage == "export"
    assert said in str(ei.value)
    assert not out.exists()


def test_the_cli_option():
    parse = build_parser().parse_args
    base = ["export", "tiny", "--backend", "portable", "--recipe", "fp32", "--out", "x"]
    assert parse(base).taps is None
    assert parse(base + ["--taps"]).taps is True
    assert parse(base + ["--taps", "4"]).taps == 4
    with pytest.raises(InvalidArgument, match="--taps"):
        parse(base + ["--taps", "0"])
    # --taps before the positional MODEL: the model is not read as a count
    from etproof.cli.main import _taps_before_model
    a = parse(_taps_before_model(["export", "--taps", "tiny", "--backend", "portable", "--out",
                                  "x"]))
    assert a.taps is True and a.model_pos == "tiny"
    a = parse(_taps_before_model(["export", "--taps", "3", "tiny", "--backend", "portable",
                                  "--out", "x"]))
    assert a.taps == 3 and a.model_pos == "tiny"


# ---- the twin's size budget (etproof.export.taps.fit_budget) ------------------------------------------

def test_a_twin_within_the_budget_keeps_every_case_and_tap():
    from etproof.export.taps import fit_budget

    idx, cases = fit_budget([10, 20, 30], 256, cases=3, bytes_per_element=12, budget=60 * 12 * 3)
    assert (idx, cases) == ([0, 1, 2], 3)


def test_over_the_budget_the_twin_keeps_the_first_case_then_fewer_evenly_spaced_taps():
    from etproof.export.taps import fit_budget, spaced_indices

    sizes = [100] * 50
    # all 50 taps fit one case (50 * 100 * 12 bytes) but not three: one case, every tap
    idx, cases = fit_budget(sizes, 256, cases=3, bytes_per_element=12, budget=50 * 100 * 12)
    assert (idx, cases) == (list(range(50)), 1)
    # half of that: the most evenly spaced taps that fit, the last among them
    budget = 25 * 100 * 12
    idx, cases = fit_budget(sizes, 256, cases=3, bytes_per_element=12, budget=budget)
    assert cases == 1 and idx[-1] == 49 and idx == spaced_indices(50, len(idx))
    assert sum(sizes[i] for i in idx) * 12 <= budget
    assert sum(sizes[i] for i in spaced_indices(50, len(idx) + 1)) * 12 > budget
    # nothing fits: the last tap alone
    assert fit_budget(sizes, 256, cases=3, bytes_per_element=12, budget=1) == ([49], 1)


# ---- taps_range, feeds, eligible_index, exported_from (attribute --bisect and --output) ---------

# Refused before torch.export runs; a range past the program's eligible nodes is refused after it
# (integration/test_taps.py).
@pytest.mark.parametrize("taps, taps_range, match", [
    (True, (3, 1), "FIRST <= LAST"),
    (True, (-1, 2), "FIRST <= LAST"),
    (None, (0, 2), "taps_range without taps"),
])
def test_a_bad_taps_range_is_refused_before_anything_is_written(tmp_path, taps, taps_range,
                                                                 match):
    out = tmp_path / "out"
    with pytest.raises(InvalidArgument, match=match):
        export_model(name="refused", out_dir=out, backend="portable", recipe="fp32", taps=taps,
                     taps_range=taps_range, **attribution.spec())
    assert not (out / "refused").exists()


def test_the_cli_taps_range_option(tmp_path):
    parse = build_parser().parse_args
    base = ["export", "tiny", "--backend", "portable", "--recipe", "fp32", "--out", "x", "--taps"]
    assert parse(base).taps_range is None
    assert parse(base + ["--taps-range", "3:7"]).taps_range == (3, 7)
    for bad in ("7:3", "3", "a:b", "-1:2"):
        with pytest.raises(InvalidArgument, match="--taps-range"):
            parse(base + ["--taps-range", bad])
    from etproof.cli.main import main
    assert main(["export", "tiny", "--backend", "all", "--recipe", "fp32", "--out",
                 str(tmp_path), "--taps", "--taps-range", "0:1"]) == 2
    assert not any(tmp_path.iterdir())
