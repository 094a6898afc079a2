"""Per-backend quirks live in one module per backend (etproof.export.quirks; issue 32): no module
outside that package and the backend table branches on a backend's key, every quirks module is
registered, and a backend without one gets the defaults."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from etproof.backends import keys
from etproof.export import quirks
from etproof.export.quirks import MODULES, REGISTRY, BackendQuirks, quirks_for
from etproof.export.references import reference_names
from etproof.export.targets import target_record

PKG = Path(__file__).resolve().parents[2] / "etproof"
QUIRKS_DIR = PKG / "export" / "quirks"
# Where a backend's key may be compared to a literal: the table (its validation) and the quirks.
ALLOWED = {PKG / "backends.py"}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _is_kind(node: ast.AST) -> bool:
    """``X["kind"]``: the table's kind column ("portable", "delegate"), whose value "portable"
    is also a key."""
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
            and node.slice.value == "kind")


def key_branches(tree: ast.AST, backend_keys) -> list[tuple[int, str]]:
    """(line, source) of every comparison in ``tree`` of something (not a table kind) with a string
    literal, or a literal tuple/list/set of them, that is a backend key: ``key == "openvino"``,
    ``backend != "coreml"``, ``key in ("metal", "cuda")``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if any(_is_kind(o) for o in operands):
            continue
        if any(s in backend_keys for o in operands for s in _strings(o)):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_outside_the_quirks_and_the_table_branches_on_a_backend_key():
    backend_keys = set(keys())
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path in ALLOWED or QUIRKS_DIR in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += [f"{path.relative_to(PKG.parent)}:{line}: {src}"
                  for line, src in key_branches(tree, backend_keys)]
    assert found == [], ("a backend's quirk belongs in its module of etproof/export/quirks "
                         "(a BackendQuirks hook), not in a branch on its key:\n" + "\n".join(found))


@pytest.mark.parametrize("source, n", [
    ('if backend == "openvino":\n    pass\n', 1),
    ('x = key != "coreml"\n', 1),
    ('if key in ("metal", "cuda"):\n    pass\n', 1),
    ('if "xnnpack" == b and recipe == "fp32":\n    pass\n', 1),
    ('if entry["kind"] == "portable":\n    pass\n', 0),   # the table's kind column
    ('if recipe == "fp32":\n    pass\n', 0),
    ('pairs = [("xnnpack", "fp32")]\n', 0),               # a list of columns is data
])
def test_the_key_branch_check_sees_a_branch(source, n):
    """The check above is not vacuous."""
    assert len(key_branches(ast.parse(source), set(keys()))) == n


def test_every_quirks_module_is_registered_under_its_key():
    files = {p.stem for p in QUIRKS_DIR.glob("*.py")} - {"__init__", "base"}
    registered = {m.__name__.rsplit(".", 1)[-1] for m in MODULES}
    assert files == registered, f"register in etproof/export/quirks/__init__.py: {files ^ registered}"
    table = set(keys())
    for m in MODULES:
        q = m.QUIRKS
        assert isinstance(q, BackendQuirks), m.__name__
        assert q.key in table, (m.__name__, q.key)
        assert m.__name__.rsplit(".", 1)[-1] == q.key.replace("-", "_"), (m.__name__, q.key)
        assert quirks_for(q.key) is q
    assert len(REGISTRY) == len(MODULES)


def test_every_quirks_module_overrides_only_hooks():
    hooks = {n for n in vars(BackendQuirks) if not n.startswith("_")}
    for m in MODULES:
        own = {n for c in type(m.QUIRKS).__mro__[:-2] for n in vars(c)
               if not n.startswith("_")}
        assert own and own <= hooks, (m.__name__, own - hooks)


class _Cls:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def test_a_backend_without_a_module_gets_the_defaults():
    q = quirks_for("portable")
    assert type(q) is BackendQuirks and q.key == "portable"
    assert q.minimum_partitioner(_Cls).args == () and q.partitioner(_Cls, {"x": 1}).args == ()
    assert q.lowering_config() == ({}, None)
    assert q.effective_precision("float16", "fp16") == "float16"
    assert q.extra_references("fp32", ["float64"]) == []
    assert q.target_record(b"RR_UPCVO") is None


def test_the_quirks_keep_their_behaviour():
    assert quirks_for("metal").minimum_partitioner(_Cls).args == ([],)
    assert quirks_for("cuda").minimum_partitioner(_Cls).args == ([],)
    assert quirks_for("coreml").partitioner(_Cls, None).args == ()  # no recipe: the smallest
    assert reference_names("openvino", "fp32", "float32", False) == ["float64", "bfloat16"]
    assert reference_names("openvino", "fp32", "bfloat16", False) == ["float64", "bfloat16"]
    assert reference_names("xnnpack", "fp32", "float32", False) == ["float64"]
    assert target_record("xnnpack", b"RR_UPCVO") is None


def test_the_quirks_package_is_importable_alone():
    """It imports nothing of the export layer but itself (test_layering holds the ranks)."""
    assert importlib.import_module("etproof.export.quirks") is quirks
