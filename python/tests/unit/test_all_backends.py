"""Every (backend, recipe) the export half supports, on the tiny model: real exports, no mocks.

One session-scoped `export tiny --backend all` (with one pair forced to fail through the
ETPROOF_TEST_FAIL_LOWER test hook) feeds every test here.

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_all_backends.py.
"""

import json

from etproof.export.pipeline import supported_pairs

from support import FORCED, EXPECTED, REFUSED_FOR_TINY


def test_every_supported_pair_is_covered_here():
    assert set(EXPECTED) | {FORCED} | set(REFUSED_FOR_TINY) == set(supported_pairs())


def test_demo_columns():
    from etproof.demo.demo import demo_pairs, left_out

    pairs = demo_pairs()
    # the demo's first three columns stay, with the same names
    assert {("portable", "fp32"), ("xnnpack", "fp32"),
            ("xnnpack", "int8-dynamic-per-channel")} <= set(pairs)
    for pair, why in left_out().items():
        assert pair in supported_pairs() and pair not in pairs and why
    assert set(demo_pairs(all_columns=True)) == set(supported_pairs())


def test_demo_xfail_record_is_one_file_the_demo_copies(tmp_path):
    """data/demo-xfail.json is the one home of the demo's expected failures (docs/xfail.md)."""
    from etproof.demo.demo import DEMO_XFAIL, demo_pairs, write_xfail

    doc = json.loads(DEMO_XFAIL.read_text(encoding="utf-8"))
    assert doc["schema_version"] == 1
    for r in doc["records"]:
        assert set(r) <= {"model", "backend", "recipe", "half", "reason", "recorded", "cases"}
        assert r["half"] in ("export", "runtime") and r["reason"]
        assert (r["backend"], r["recipe"]) in demo_pairs()  # a demo column, not left out
    records = write_xfail(tmp_path)
    assert records == doc["records"]
    assert (tmp_path / "xfail.json").read_bytes() == DEMO_XFAIL.read_bytes()
