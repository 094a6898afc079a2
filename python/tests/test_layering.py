"""The export half's layering: who may import whom (each module's docstring says it).

table (etproof.backends) < exporter (recipes, arguments, quantize, lower, delegation, bundle,
toolchain, export) < probe, runner, cache, CLI. Checked two ways: by importing a module in a fresh
interpreter and listing what came with it, and by reading every module's imports (ast).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "etproof"

EXPORTER = ("etproof.export", "etproof.recipes", "etproof.arguments", "etproof.quantize",
            "etproof.lower", "etproof.delegation", "etproof.bundle", "etproof.toolchain",
            "etproof.references", "etproof.taps", "etproof.taps_quantized", "etproof.twin",
            "etproof.program")
# Above the exporter: what the exporter's modules (and the table) never import.
ABOVE = ("etproof.probe", "etproof.runner", "etproof.cache", "etproof.cli", "etproof.demo",
         "etproof.golden", "etproof.testbundles", "etproof.userspec", "etproof.plot")


def _modules_after_import(module: str) -> set[str]:
    """sys.modules after ``import module`` in a fresh interpreter (this package's PYTHONPATH)."""
    code = (f"import json, sys; import {module}; "
            "print(json.dumps(sorted(sys.modules)))")
    env = dict(os.environ, PYTHONPATH=str(PKG.parent))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_the_backend_table_imports_no_exporter_torch_or_executorch():
    loaded = _modules_after_import("etproof.backends")
    assert "etproof.backends" in loaded
    ours = {m for m in loaded if m.startswith("etproof")}
    assert ours == {"etproof", "etproof.errors", "etproof.schema", "etproof.backends"}, ours
    for heavy in ("torch", "executorch", "executorch.exir", "torchao", "numpy"):
        assert heavy not in loaded, heavy


def test_the_exporter_imports_neither_the_probe_nor_torch():
    loaded = _modules_after_import("etproof.export")
    assert set(EXPORTER) <= loaded
    assert not loaded & set(ABOVE), loaded & set(ABOVE)
    for heavy in ("torch", "executorch", "torchao"):
        assert heavy not in loaded, heavy


def test_the_probe_sits_above_the_exporter():
    loaded = _modules_after_import("etproof.probe")
    assert {"etproof.lower", "etproof.toolchain", "etproof.backends"} <= loaded
    assert "torch" not in loaded and "executorch" not in loaded  # only in the child, by need


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


@functools.lru_cache(maxsize=1)
def _sources() -> dict[str, ast.Module]:
    return {_module_name(p): ast.parse(p.read_text(encoding="utf-8"), str(p))
            for p in sorted(PKG.rglob("*.py"))}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _etproof_imports(mod: str, tree: ast.Module):
    """(node, imported module, names) for every import of an etproof module in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "etproof" or node.module.startswith("etproof.")):
            yield node, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "etproof" or a.name.startswith("etproof."):
                    yield node, a.name, []


def _private_uses(mod: str, tree: ast.Module) -> list[str]:
    """Private names of other etproof modules that ``tree`` imports (``from etproof.x import
    _y``) or reads off an imported module (``x._y`` after ``from etproof import x`` or ``import
    etproof.x as x``)."""
    found = []
    bound: set[str] = set()  # local names bound to an etproof module
    for node, target, names in _etproof_imports(mod, tree):
        if target == mod:
            continue
        found += [f"{mod}:{node.lineno}: from {target} import {n}" for n in names if _is_private(n)]
        for a in node.names:
            if isinstance(node, ast.Import) or a.name in _sources_names():
                bound.add(a.asname or a.name.split(".")[0])
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and _is_private(node.attr)):
            found.append(f"{mod}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


@functools.lru_cache(maxsize=1)
def _sources_names() -> set[str]:
    """The last dotted part of every etproof module (what ``from etproof import X`` binds)."""
    return {m.rsplit(".", 1)[-1] for m in _sources()}


def test_no_module_imports_another_modules_private_names():
    found = [f for mod, tree in _sources().items() for f in _private_uses(mod, tree)]
    assert found == [], found


def _import_graph() -> dict[str, set[str]]:
    mods = _sources()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, tree in mods.items():
        for _node, target, names in _etproof_imports(mod, tree):
            for n in names:  # `from etproof import lower` imports etproof.lower
                if f"{target}.{n}" in mods:
                    graph[mod].add(f"{target}.{n}")
            if target in mods and target != "etproof":
                graph[mod].add(target)
    return graph


# Modules whose functions may import etproof modules: the CLI's export commands import the
# exporter when they run, so that `python -m etproof probe` from its cache (and the C++ `etproof
# backends` running it) stays under 0.1 s (issue 12). _import_graph walks whole modules, so those
# imports are still in the graph and the cycle test still sees them.
LAZY_IMPORTERS = {"etproof.cli"}


def test_etproof_imports_are_at_module_level():
    """An etproof import inside a function is how a cycle hides; the graph is explicit."""
    found = []
    for mod, tree in _sources().items():
        if mod in LAZY_IMPORTERS:
            continue
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [f"{mod}:{node.lineno} ({fn.name}): {target}"
                          for node, target, _ in _etproof_imports(mod, fn)]
    assert found == [], found


def test_the_import_graph_has_no_cycle_and_keeps_its_layers():
    graph = _import_graph()
    assert {"etproof.export", "etproof.runner", "etproof.userspec"} <= graph["etproof.cli"]
    state: dict[str, str] = {}

    def visit(m: str, path: list[str]) -> None:
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", "import cycle: " + " -> ".join(path + [m])
        state[m] = "open"
        for dep in sorted(graph[m]):
            visit(dep, path + [m])
        state[m] = "done"

    for m in sorted(graph):
        visit(m, [])
    assert graph["etproof.backends"] <= {"etproof.errors", "etproof.schema"}, graph["etproof.backends"]
    assert graph["etproof.schema"] <= {"etproof.errors"}, graph["etproof.schema"]
    assert graph["etproof.recipes"] <= {"etproof.backends"}, graph["etproof.recipes"]
    for m in EXPORTER + ("etproof.backends", "etproof.manifest", "etproof.errors"):
        assert not graph[m] & set(ABOVE), (m, graph[m] & set(ABOVE))
    assert {m for m, deps in graph.items() if "etproof.probe" in deps} == {"etproof.cli"}
    assert {m for m, deps in graph.items() if "etproof.plot" in deps} == {"etproof.cli"}


@pytest.mark.parametrize("source, want", [
    ("from etproof.export import _file_ref\n", "from etproof.export import _file_ref"),
    ("from etproof import bundle\nbundle._exchange(1, 2)\n", "bundle._exchange"),
    ("import etproof.errors as e\ne._x\n", "e._x"),
])
def test_the_private_name_check_sees_a_violation(source, want):
    """The check above is not vacuous: each way of reaching a private name is flagged."""
    found = _private_uses("etproof.fake", ast.parse(source))
    assert len(found) == 1 and found[0].endswith(want), found


def test_the_private_name_check_allows_dunders_and_own_names():
    source = "from etproof import __version__\nfrom etproof.fake import _mine\n"
    assert _private_uses("etproof.fake", ast.parse(source)) == []


def test_the_export_stamp_skips_only_modules_no_export_imports():
    """cache.NOT_EXPORT_INPUTS leaves a module out of the bundles' stamp; that is sound only while
    nothing that exports (runner, demo, golden set, test bundles, user specs) imports it."""
    from etproof.cache import NOT_EXPORT_INPUTS

    assert NOT_EXPORT_INPUTS == {"probe.py", "plot.py"}
    skipped = {"etproof." + m.removesuffix(".py").replace("/", ".") for m in NOT_EXPORT_INPUTS}
    for exporting in ("etproof.runner", "etproof.demo", "etproof.golden", "etproof.testbundles",
                      "etproof.userspec", "etproof.export", "etproof.cache"):
        loaded = _modules_after_import(exporting)
        assert exporting in loaded
        assert not loaded & skipped, (exporting, loaded & skipped)
