"""The backend table and the export probe (real partitioners, real child processes, no mocks).

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_backends.py."""

import importlib.util
import json
import time

import pytest

from etproof.probe import probe
from etproof.probe.probe import probe_all, probe_export
from etproof.cli.main import main


def test_qnn_without_sdk_is_refused_without_importing_it(monkeypatch):
    monkeypatch.delenv("QNN_SDK_ROOT", raising=False)
    r = probe_export("qnn", timeout_s=60)
    assert r["status"] == "refused"
    assert r["reason"].startswith("QNN_SDK_ROOT is not set: Qualcomm AI Engine Direct SDK")
    assert "qualcomm" not in r["backend_modules"]  # the child never imported the package


def test_refusals_name_what_is_missing():
    r = probe_export("cuda", timeout_s=60)
    if importlib.util.find_spec("triton") is not None:
        pytest.skip("triton is installed here")
    assert r["status"] == "refused"
    assert "'triton' is not installed" in r["reason"] and "pip install" in r["reason"]
    if importlib.util.find_spec("tosa_serializer") is None:
        r = probe_export("arm-tosa", timeout_s=60)
        assert "'tosa_serializer' is not installed" in r["reason"]
        assert "pip install tosa-tools" in r["reason"]
        assert "executorch[ethos-u]" in r["reason"]
    r = probe_export("mps")
    assert r["status"] == "removed-upstream" and "1.5" in r["reason"]


def test_a_partitioner_that_tags_nothing_is_refused_as_such():
    # cumsum is not an XNNPACK operator: the real partitioner leaves it alone.
    r = probe_export("xnnpack", timeout_s=120, _test_model="cumsum")
    assert r["status"] == "refused", r
    assert r["reason"].startswith("the partitioner tagged nothing"), r["reason"]
    assert r["delegates"] == []


def test_one_backend_hanging_or_dying_does_not_stop_the_others(tmp_path):
    t0 = time.monotonic()
    rs = probe_all(only=["xnnpack", "qnn", "cuda", "mps"], timeout_s=5, cache_dir=tmp_path,
                   _test_faults={"xnnpack": "hang", "qnn": "crash"})
    assert time.monotonic() - t0 < 30
    by = {r["backend"]: r for r in rs}
    assert by["xnnpack"]["status"] == "refused"
    assert by["xnnpack"]["reason"].startswith("probe timed out after 5 s")
    assert by["qnn"]["status"] == "refused"
    assert by["qnn"]["reason"].startswith("probe process died (killed by signal 6)")
    assert by["cuda"]["status"] == "refused" and "cuda" in by  # still answered
    assert by["mps"]["status"] == "removed-upstream"
    assert not (tmp_path / probe.CACHE_FILE).exists()  # faults never reach the cache


def _without_seconds(rs: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rs]


@pytest.mark.skipif(not probe._use_server(), reason="the probe server forks only on Linux")
def test_the_probe_server_keeps_each_backend_in_its_own_child(tmp_path, monkeypatch):
    """One server imports torch once and forks per backend: what xnnpack's child imports never
    reaches cuda's, and a fresh interpreter per backend (ETPROOF_PROBE_FORK=0, the macOS path)
    answers exactly the same."""
    keys = ["xnnpack", "cuda", "portable"]
    served = probe_all(only=keys, cache_dir=tmp_path / "server", refresh=True)
    by = {r["backend"]: r for r in served}
    assert by["xnnpack"]["status"] == "available" and "xnnpack" in by["xnnpack"]["backend_modules"]
    assert by["portable"]["backend_modules"] == []
    if importlib.util.find_spec("triton") is None:
        assert by["cuda"]["status"] == "refused" and by["cuda"]["backend_modules"] == []
    monkeypatch.setenv("ETPROOF_PROBE_FORK", "0")
    assert not probe._use_server()
    spawned = probe_all(only=keys, cache_dir=tmp_path / "spawn", refresh=True)
    assert _without_seconds(spawned) == _without_seconds(served)


def test_cli_probe_json_requires_a_delegate_and_caches(tmp_path, capsys):
    argv = ["probe", "--json", "--only", "portable", "xnnpack", "--cache-dir", str(tmp_path)]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    by = {e["backend"]: e for e in first["export"]}
    assert set(by["xnnpack"]) == {"backend", "status", "reason", "needs", "delegates"}
    assert by["xnnpack"]["status"] == "available", by["xnnpack"]
    assert by["xnnpack"]["delegates"] == ["XnnpackBackend"]
    assert by["portable"]["status"] == "available" and by["portable"]["delegates"] == []
    t0 = time.monotonic()
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert time.monotonic() - t0 < 5  # answered from the cache
    assert main(["probe", "--only", "xnnpak", "--cache-dir", str(tmp_path)]) == 2
    assert "did you mean 'xnnpack'?" in capsys.readouterr().err
