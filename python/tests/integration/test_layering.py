"""The export half's layering: who may import whom (each subpackage's docstring says it).

The package is cut into subpackages, each with a rank (LAYERS, bottom to top): a module may import
modules of its own subpackage and of lower-ranked ones, never of a subpackage ranked the same or
higher. The root modules (etproof/*.py: errors, status, the backend table, the manifest) are the
bottom; the CLI (and ``python -m etproof``'s entry, etproof/__main__.py) the top. Checked two
ways: by reading every module's imports (ast, module-level and inside functions alike), and by
importing a module in a fresh interpreter and listing what came with it (the table imports no
torch, numpy or ExecuTorch; the exporter neither the probe nor torch).

Here, the checks that import the export half in fresh interpreters; the rest: unit/test_layering.py.
"""

from __future__ import annotations

from support import EXPORTER, _above, _modules_after_import


def test_the_exporter_imports_neither_the_probe_nor_torch():
    loaded = _modules_after_import("etproof.export.pipeline")
    assert set(EXPORTER) <= loaded
    assert not _above("export", loaded), _above("export", loaded)
    for heavy in ("torch", "executorch", "torchao"):
        assert heavy not in loaded, heavy


def test_the_export_stamp_skips_only_modules_no_export_imports():
    """cache.NOT_EXPORT_INPUTS leaves a module out of the bundles' stamp; that is sound only while
    nothing that exports (runner, demo, golden set, test bundles, user specs) imports it."""
    from etproof.export.cache import NOT_EXPORT_INPUTS

    assert NOT_EXPORT_INPUTS == {"probe/probe.py", "probe/__main__.py", "cli/plot.py"}
    skipped = {"etproof." + m.removesuffix(".py").replace("/", ".") for m in NOT_EXPORT_INPUTS}
    for exporting in ("etproof.export.runner", "etproof.demo.demo", "etproof.goldens.golden_set",
                      "etproof.fixtures.testbundles", "etproof.fixtures.verdicts",
                      "etproof.contract.userspec", "etproof.export.pipeline",
                      "etproof.export.cache"):
        loaded = _modules_after_import(exporting)
        assert exporting in loaded
        assert not loaded & skipped, (exporting, loaded & skipped)
