"""BackendQuirks: what the export half does differently for one backend, as hooks whose defaults
are "nothing special". A backend with quirks subclasses it in its own module of this package
(named after its key, "-" as "_"), overriding only the hooks it needs, and binds an instance as
``QUIRKS``; etproof.export.quirks registers the module.

May import: the root modules (etproof.backends' constants); ExecuTorch and the backends' packages
only inside the hooks (they are heavy, and some are absent on a given machine). Never the other
export modules: they call the hooks (lower.py, references.py, targets.py).
"""

from __future__ import annotations

from typing import Any


class BackendQuirks:
    """The hooks, each with the behaviour of a backend without quirks.

    Subclasses keep the signatures; ``key`` is the backend's key in data/backends.json.
    """

    def __init__(self, key: str) -> None:
        self.key = key

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r})"

    def partitioner(self, cls, recipe: dict | None):
        """An instance of the table's partitioner class ``cls`` configured for ``recipe`` (the
        table's recipe entry; None: the smallest configuration). Default: minimum_partitioner."""
        return self.minimum_partitioner(cls)

    def minimum_partitioner(self, cls):
        """An instance of ``cls`` with the smallest configuration it accepts. Default: ``cls()``."""
        return cls()

    def lowering_config(self) -> tuple[dict[str, Any], Any]:
        """(extra keyword arguments of to_edge_transform_and_lower, the ExecutorchBackendConfig
        to serialize with or None) for a delegated lowering. Default: ({}, None)."""
        return {}, None

    def effective_precision(self, precision: str, recipe: str) -> str:
        """The precision the delegate computes in for ``recipe``, whose table precision is
        ``precision``. Default: the table's."""
        return precision

    def extra_references(self, recipe: str, names: list[str]) -> list[str]:
        """References a bundle of ``recipe`` carries besides ``names`` (what
        etproof.export.references.reference_names gives every backend), in order. Default: none."""
        return []

    def target_record(self, program: bytes) -> dict | None:
        """The manifest's ``target`` for the written program (its .pte bytes): what the delegate's
        artifact was compiled for. Default: None (not target-bound)."""
        return None
