"""Toolchain facts: the versions of what exports, and the delegates and operators a serialized
program calls.

Both are read from the installed distributions and from the program's own bytes, never assumed.
Used by the manifest (``engine``, ``toolchain``, ``delegates``, ``operators``), the export cache's
stamps and the probe's cache key.

May import: etproof (its version); ExecuTorch only inside _program (the deserializer). numpy's
version is read from its distribution, not by importing it (80 ms: the cached probe's budget).
Nothing from the export stages, so the cache and the probe can use it without the exporter.
"""

from __future__ import annotations

import platform

from etproof import __version__


def version(dist: str) -> str:
    """The installed version of distribution ``dist`` (importlib.metadata), else the module's
    ``__version__``, else "unknown". Raises ImportError when neither the distribution nor a
    module of that name is installed."""
    import importlib.metadata as md  # 15 ms: only when a version is asked for

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        mod = __import__(dist)
        return str(getattr(mod, "__version__", "unknown"))


def toolchain_versions() -> dict:
    """The manifest's ``toolchain``: {"python", "torch", "executorch", "torchao", "numpy",
    "etproof"} -> version string, of this interpreter and its installed packages."""
    return {
        "python": platform.python_version(),
        "torch": version("torch"),
        "executorch": version("executorch"),
        "torchao": version("torchao"),
        "numpy": version("numpy"),
        "etproof": __version__,
    }


def _program(program_bytes: bytes):
    """A serialized .pte read with ExecuTorch's own deserializer: its Program."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    pte = deserialize_pte_binary(program_bytes)
    return getattr(pte, "program", pte)


def _delegates(program) -> list[str]:
    return sorted({d.id for plan in program.execution_plan for d in plan.delegates})


def _operators(program) -> list[str]:
    return sorted({operator_name(op.name, op.overload or "")
                   for plan in program.execution_plan for op in plan.operators})


def delegates_in_program(program_bytes: bytes) -> list[str]:
    """Sorted distinct delegate ids (the names backends register under) of every execution plan
    of a serialized .pte, read with ExecuTorch's own deserializer; [] for a portable program."""
    return _delegates(_program(program_bytes))


def operator_name(name: str, overload: str) -> str:
    """The name ExecuTorch's kernel registry knows an operator by (Method::init's lookup,
    runtime/kernel/operator_registry.h): ``NAMESPACE::NAME.OVERLOAD``, or without ``.OVERLOAD``
    when the overload is empty (``aten::add.out``)."""
    return f"{name}.{overload}" if overload else name


def operators_in_program(program_bytes: bytes) -> list[str]:
    """Sorted distinct names (operator_name) of the operators every execution plan of a
    serialized .pte calls outside its delegates, read with ExecuTorch's own deserializer; [] for
    a program whose every operator was delegated."""
    return _operators(_program(program_bytes))


def program_calls(program_bytes: bytes) -> tuple[list[str], list[str]]:
    """(delegates_in_program, operators_in_program) of one .pte, deserialized once (a large
    program's deserialization is not free; the export reads both)."""
    program = _program(program_bytes)
    return _delegates(program), _operators(program)
