"""The export half's layering: who may import whom (each subpackage's docstring says it).

The package is cut into subpackages, each with a rank (LAYERS, bottom to top): a module may import
modules of its own subpackage and of lower-ranked ones, never of a subpackage ranked the same or
higher. The root modules (etproof/*.py: errors, status, the backend table, the manifest) are the
bottom; the CLI (and ``python -m etproof``'s entry, etproof/__main__.py) the top. Checked two
ways: by reading every module's imports (ast, module-level and inside functions alike), and by
importing a module in a fresh interpreter and listing what came with it (the table imports no
torch, numpy or ExecuTorch; the exporter neither the probe nor torch).

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_layering.py.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from support import PKG, LAYERS, EXPORTER, layer_of, _above, _modules_after_import


# Subpackages inside a ranked one: they take its rank (layer_of reads the first part). Each is a
# leaf of its layer: it imports itself and lower ranks only, never the rest of its own layer
# (the export modules call the backends' quirks, not the other way round).
NESTED = {"export/quirks"}


def test_the_backend_table_imports_no_exporter_torch_or_executorch():
    loaded = _modules_after_import("etproof.backends")
    assert "etproof.backends" in loaded
    ours = {m for m in loaded if m.startswith("etproof")}
    assert ours == {"etproof", "etproof.errors", "etproof.status", "etproof.schema", "etproof.backends"}, ours
    for heavy in ("torch", "executorch", "executorch.exir", "torchao", "numpy"):
        assert heavy not in loaded, heavy


def test_the_probe_sits_above_the_exporter():
    loaded = _modules_after_import("etproof.probe.probe")
    assert {"etproof.export.lower", "etproof.export.toolchain", "etproof.backends"} <= loaded
    assert "torch" not in loaded and "executorch" not in loaded  # only in the child, by need
    # etproof/export/__init__.py imports nothing: the probe's stage does not bring the pipeline
    assert "etproof.export.pipeline" not in loaded


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
            if target in mods and target not in ("etproof", mod):  # a package its own submodules
                graph[mod].add(target)
    return graph


# Modules whose functions may import etproof modules: the CLI's export commands import the
# exporter when they run, so that `python -m etproof probe` from its cache (and the C++ `etproof
# backends` running it) stays under 0.1 s (issue 12). _import_graph walks whole modules, so those
# imports are still in the graph and the cycle test still sees them.
LAZY_IMPORTERS = {"etproof.cli.main"}


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
    assert {"etproof.export.pipeline", "etproof.export.runner",
            "etproof.contract.userspec"} <= graph["etproof.cli.main"]
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
    assert graph["etproof.backends"] <= {"etproof.errors", "etproof.status", "etproof.schema"}, \
        graph["etproof.backends"]
    assert graph["etproof.schema"] <= {"etproof.errors"}, graph["etproof.schema"]
    assert graph["etproof.contract.recipes"] <= {"etproof.backends"}, \
        graph["etproof.contract.recipes"]
    for m in EXPORTER + ("etproof.backends", "etproof.manifest", "etproof.errors"):
        assert not _above("export", graph[m]), (m, _above("export", graph[m]))
    # outside the probe, only the CLI imports it
    assert {m for m, deps in graph.items() if layer_of(m) != "probe"
            and any(layer_of(d) == "probe" for d in deps)} == {"etproof.cli.main"}
    assert {m for m, deps in graph.items() if "etproof.cli.plot" in deps} == {"etproof.cli.main"}


def _upward_imports(mod: str, tree: ast.Module) -> list[str]:
    """Every import in ``tree`` (module level or inside a function) of an etproof module that
    ``mod``'s layer may not import: one of a subpackage ranked the same as ``mod``'s or higher."""
    own = layer_of(mod)
    found = []
    for node, target, names in _etproof_imports(mod, tree):
        # `from etproof.x import y` imports module etproof.x.y where there is one, else etproof.x
        for t in [f"{target}.{n}" for n in names if f"{target}.{n}" in _sources()] or [target]:
            if t == "etproof":
                continue
            theirs = layer_of(t)
            if theirs != own and LAYERS[theirs] >= LAYERS[own]:
                found.append(f"{mod} ({own or 'root'}, {LAYERS[own]}):{node.lineno} imports {t} "
                             f"({theirs or 'root'}, {LAYERS[theirs]})")
    return found


def test_every_subpackage_has_a_rank():
    subpackages = {p.parent.name for p in PKG.glob("*/__init__.py")}
    assert subpackages == set(LAYERS) - {""}, subpackages ^ (set(LAYERS) - {""})
    nested = {p.parent.relative_to(PKG).as_posix() for p in PKG.glob("*/*/__init__.py")}
    assert nested == NESTED, f"a nested subpackage takes its parent's rank: list it in NESTED ({nested})"
    assert not list(PKG.glob("*/*/*/__init__.py")), "at most two levels of subpackages"


def test_a_nested_subpackage_imports_only_itself_and_lower_ranks():
    found = []
    for folder in NESTED:
        own = "etproof." + folder.replace("/", ".")
        layer = folder.split("/")[0]
        for mod, tree in _sources().items():
            if mod != own and not mod.startswith(own + "."):
                continue
            for node, target, names in _etproof_imports(mod, tree):
                for t in [f"{target}.{n}" for n in names if f"{target}.{n}" in _sources()] or [target]:
                    if layer_of(t) == layer and t != own and not t.startswith(own + "."):
                        found.append(f"{mod}:{node.lineno} imports {t}")
    assert found == [], found


def test_no_module_imports_upward():
    """A module imports its own subpackage and lower-ranked ones only (LAYERS)."""
    found = [f for mod, tree in _sources().items() for f in _upward_imports(mod, tree)]
    assert found == [], "\n".join(found)


def test_imports_are_absolute():
    """A relative import (``from ..cli import x``) would slip past the checks above."""
    found = [f"{mod}:{node.lineno}" for mod, tree in _sources().items()
             for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    assert found == [], found


@pytest.mark.parametrize("mod, source, n", [
    ("etproof.export.fake", "from etproof.cli import quiet\n", 1),            # up
    ("etproof.export.fake", "def f():\n    import etproof.probe.probe\n", 1),  # up, lazily
    ("etproof.probe.fake", "from etproof.demo.demo import run_demo\n", 1),    # a sibling
    ("etproof.fake", "from etproof.contract import recipes\n", 1),            # root -> up
    ("etproof.__main__", "from etproof.cli.main import main\n", 0),           # the entry
    ("etproof.goldens.fake", "from etproof.demo import photos\n", 0),         # down
    ("etproof.export.fake", "from etproof.export import lower\nimport etproof.errors\n", 0),
])
def test_the_layer_check_sees_an_upward_import(mod, source, n):
    """The check above is not vacuous: an upward or sideways import is flagged, a downward or
    same-subpackage one is not."""
    found = _upward_imports(mod, ast.parse(source))
    assert len(found) == n, found


@pytest.mark.parametrize("source, want", [
    ("from etproof.export.pipeline import _file_ref\n",
     "from etproof.export.pipeline import _file_ref"),
    ("from etproof.export import bundle\nbundle._exchange(1, 2)\n", "bundle._exchange"),
    ("import etproof.errors as e\ne._x\n", "e._x"),
])
def test_the_private_name_check_sees_a_violation(source, want):
    """The check above is not vacuous: each way of reaching a private name is flagged."""
    found = _private_uses("etproof.fake", ast.parse(source))
    assert len(found) == 1 and found[0].endswith(want), found


def test_the_private_name_check_allows_dunders_and_own_names():
    source = "from etproof import __version__\nfrom etproof.fake import _mine\n"
    assert _private_uses("etproof.fake", ast.parse(source)) == []
