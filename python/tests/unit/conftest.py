"""The unit tests never skip: a skip here (pytest.skip, a skip or skipif mark, an importorskip at
module level) is reported as a failure. A test that needs an export, a lowering probe child or a
built binary, and so may find it missing, belongs in python/tests/integration/."""

from __future__ import annotations

import pytest


def _refuse_skip(report, nodeid: str) -> None:
    """Turn the skipped ``report`` (a TestReport or CollectReport) into a failure naming ``nodeid``
    and the skip's reason; an xfail (also reported as skipped) is left as it is."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    report.outcome = "failed"
    report.longrepr = (f"unit tests never skip: {nodeid} skipped ({reason}); a test that needs an "
                       "export, a lowering probe child or a built binary belongs in "
                       "python/tests/integration/")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _refuse_skip(outcome.get_result(), item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _refuse_skip(outcome.get_result(), collector.nodeid)
