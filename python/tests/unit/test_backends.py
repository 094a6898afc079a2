"""The backend table and the export probe (real partitioners, real child processes, no mocks).

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_backends.py."""

import copy
import importlib.util
import json

import pytest

from etproof import backends
from etproof.export import pipeline as export
from etproof.probe import probe
from etproof.backends import BackendTableError, validate_table


KEYS = ["portable", "xnnpack", "coreml", "vulkan", "openvino", "qnn", "mlx", "metal", "cuda",
        "arm-ethos-u", "arm-vgf", "arm-tosa", "mediatek", "samsung", "nxp", "cadence",
        "cortex-m", "webgpu", "mps"]


def _doc():
    return json.loads(backends.TABLE_PATH.read_text())


def test_table_has_every_key_with_every_field_and_is_canonical():
    raw = backends.TABLE_PATH.read_text()
    doc = json.loads(raw)
    assert raw == json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    table = validate_table(doc)
    assert list(table) == KEYS
    assert table["webgpu"]["runtime_ids"] == ["VulkanBackend"]
    assert table["portable"]["runtime_ids"] == []
    assert table["mps"]["upstream"] == {"status": "removed", "since": "1.5",
                                        "note": table["mps"]["upstream"]["note"]}
    for k, b in table.items():
        if b["partitioner"] and b["upstream"]["status"] == "active":
            # the import path names a real module of the installed wheel (not imported: some
            # download or need an SDK)
            top = b["partitioner"]["module"].rsplit(".", 1)[0]
            assert importlib.util.find_spec(top) is not None, (k, top)


def test_a_bad_table_is_a_typed_error():
    doc = _doc()
    bad = copy.deepcopy(doc)
    del bad["backends"][1]["runtime_ids"]
    with pytest.raises(BackendTableError, match=r"backends\[1\]\.runtime_ids: missing"):
        validate_table(bad)
    bad = copy.deepcopy(doc)
    bad["backends"][2]["kind"] = "magic"
    with pytest.raises(BackendTableError, match=r"backends\[2\]\.kind: unknown value 'magic'"):
        validate_table(bad)
    bad = copy.deepcopy(doc)
    bad["backends"].append(copy.deepcopy(bad["backends"][0]))
    with pytest.raises(BackendTableError, match="listed twice"):
        validate_table(bad)
    bad = copy.deepcopy(doc)
    del bad["kernel_libraries"][0]["wheel_component"]
    with pytest.raises(BackendTableError, match=r"kernel_libraries\[0\]\.wheel_component: missing"):
        validate_table(bad)
    bad = copy.deepcopy(doc)  # every problem of the schema at once
    del bad["backends"][1]["recipes"][0]["quantized"]
    bad["backends"][0]["speed"] = "fast"
    with pytest.raises(BackendTableError, match=r"backends\[0\]\.speed: is not a field of "
                       r"schema/backends.schema.json; backends\[1\]\.recipes\[0\]\.quantized: missing"):
        validate_table(bad)
    bad = copy.deepcopy(doc)
    bad["kernel_libraries"].append(copy.deepcopy(bad["kernel_libraries"][0]))
    with pytest.raises(BackendTableError, match="namespace 'aten' is listed twice"):
        validate_table(bad)


def test_both_halves_name_the_kernel_library_from_the_table():
    """An operator without a kernel is refused naming its library; the words come from the
    table's kernel_libraries (the C++ twin: KernelsTest in cpp/tests/unit/kernels_test.cpp)."""
    from etproof.export.lower import kernel_library_for

    libs = {e["namespace"]: e["library"] for e in _doc()["kernel_libraries"]}
    assert kernel_library_for("aten::bucketize.Tensor_out") == libs["aten"]
    assert kernel_library_for("quantized_decomposed::quantize_per_tensor.out") == \
        libs["quantized_decomposed"]
    assert kernel_library_for("mylib::op.out") == "the library that registers mylib::op.out"


def test_export_reads_its_pairs_from_the_table():
    table = backends.load_table()
    exported = {(k, r["recipe"]): r for k, b in table.items() for r in b["recipes"]
                if not r.get("planned")}
    assert set(export.RECIPES) == set(exported)
    for pair, facts in export.RECIPES.items():
        assert facts["precision"] == exported[pair]["precision"]
        assert facts["partitioner"] == table[pair[0]]["partitioner"]
    assert set(export.EXECUTORCH_BACKENDS) == set(KEYS) - set(export.supported_backends())
    # one home per fact: no backend list or delegate id spelled out in the exporter or cli/main.py
    for mod in ("export/pipeline.py", "contract/recipes.py", "contract/arguments.py",
                "export/quantize.py", "export/lower.py", "export/delegation.py", "export/bundle.py",
                "export/toolchain.py", "cli/main.py"):
        src = (backends.REPO / "python" / "etproof" / mod).read_text()
        for fact in ("mediatek", "XnnpackBackend", "executorch.backends.xnnpack.partition"):
            assert fact not in src, (mod, fact)


def test_the_probe_cache_key_follows_an_installed_prerequisite(tmp_path, monkeypatch):
    """A prerequisite installed, upgraded or removed changes the key (so the cache is not
    reused); read from the *.dist-info names and module files on sys.path, without importing."""
    before = probe.cache_key()
    assert probe.cache_key() == before
    (tmp_path / "ethos_u_vela-99.0.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert probe._installed()["ethos_u_vela"] == "99.0"
    with_vela = probe.cache_key()
    assert with_vela != before
    (tmp_path / "tosa_serializer").mkdir()
    assert probe._module_present("tosa_serializer")
    assert probe.cache_key() not in (before, with_vela)
