"""What a partitioner delegated, and what it said about the nodes it did not take.

``Rejections`` listens to the partitioners' own log records while lowering runs;
``delegation_record`` counts delegated and non-delegated nodes per operator with ExecuTorch's
get_delegation_info and attaches those reasons (the manifest's ``delegation``, docs/manifest.md).

May import: the standard library; ExecuTorch only inside functions. Used by etproof.export.lower.
"""

from __future__ import annotations

import logging
import re


class Rejections(logging.Handler):
    """What the partitioner said about the nodes it did not take, read from its own log records.

    - ``WhyNoPartition`` (executorch.exir.backend.utils; XNNPACK's and Arm's config checks): a
      DEBUG record carrying the node and the reason -> by node name.
    - Core ML: "Skipping op for CoreML delegation because REASON: TARGET" (INFO) -> by target.
    - Vulkan: "[Vulkan Partitioner] Due to [REASON], skipping ... = TARGET(...)" (INFO, root
      logger) -> by target.
    Partitioners that report nothing (OpenVINO prints to stdout) leave reasons unknown.

    While active it is the root logger's only handler, the root logger passes INFO and
    ``executorch.backends`` logs at DEBUG; records of WARNING and above still reach the handlers
    it replaced.
    """

    _COREML = re.compile(r"^Skipping op for CoreML delegation because (.+): ([^\s:]+)$")
    _VULKAN = re.compile(r"^\[Vulkan Partitioner\] Due to \[(.+?)\], skipping .*? = "
                         r"([A-Za-z0-9_.]+)\(")

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.by_node: dict[str, list[str]] = {}
        self.by_target: dict[str, list[str]] = {}
        self._saved: list = []

    def __enter__(self):
        root = logging.getLogger()
        self._saved = list(root.handlers)
        self._eb = logging.getLogger("executorch.backends")
        self._eb_level = self._eb.level
        self._root_level = root.level
        root.handlers = [self]
        root.setLevel(min(root.level, logging.INFO))  # Vulkan reports on the root logger at INFO
        self._eb.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc):
        root = logging.getLogger()
        root.handlers = self._saved
        root.setLevel(self._root_level)
        self._eb.setLevel(self._eb_level)
        return False

    @staticmethod
    def _add(d: dict, key: str, reason: str) -> None:
        reason = reason.strip().rstrip(".")
        if key and reason and reason not in d.setdefault(key, []):
            d[key].append(reason)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from executorch.exir.backend.utils import WhyNoPartition

            msg = record.msg
            if isinstance(msg, WhyNoPartition):
                if msg.node is not None:
                    self._add(self.by_node, msg.node.name, msg.reason)
            else:
                text = record.getMessage()
                m = self._COREML.match(text) or self._VULKAN.match(text)
                if m and not m.group(2) in ("placeholder", "output"):
                    self._add(self.by_target, m.group(2).lower(), m.group(1))
        except Exception:  # noqa: BLE001 - a reason we cannot read stays unknown
            pass
        if record.levelno >= logging.WARNING:
            targets = self._saved or ([logging.lastResort] if logging.lastResort else [])
            for h in targets:
                if record.levelno >= h.level:
                    h.handle(record)

    def reasons(self, node) -> list[str]:
        """The reasons heard for one graph node: by its name, then by its target's name."""
        target = getattr(node.target, "__name__", "") or ""
        out = list(self.by_node.get(node.name, []))
        for r in self.by_target.get(target.lower(), []):
            if r not in out:
                out.append(r)
        return out


def delegation_record(edge, rejections: Rejections | None = None) -> dict:
    """The manifest's ``delegation``: {"delegated_nodes", "non_delegated_nodes", "by_operator":
    [{"op", "delegated", "non_delegated"[, "reasons"]}]} of a lowered edge program, counted by
    ExecuTorch's get_delegation_info; ``reasons`` (sorted) where ``rejections`` heard any for a
    non-delegated operator."""
    from executorch.devtools.backend_debug import get_delegation_info

    # Every method of the program (one, "forward", unless the model has several), summed.
    methods = sorted(getattr(edge, "methods", None) or ["forward"])
    totals = {"delegated_nodes": 0, "non_delegated_nodes": 0}
    by_op_counts: dict[str, dict] = {}
    reasons: dict[str, list[str]] = {}
    for method in methods:
        gm = edge.exported_program(method).graph_module
        info = get_delegation_info(gm)
        totals["delegated_nodes"] += int(info.num_delegated_nodes)
        totals["non_delegated_nodes"] += int(info.num_non_delegated_nodes)
        for op, b in info.delegation_by_operator.items():
            e = by_op_counts.setdefault(op, {"op": op, "delegated": 0, "non_delegated": 0})
            e["delegated"] += int(b.delegated)
            e["non_delegated"] += int(b.non_delegated)
        if rejections is not None:
            # get_delegation_info names an op by its node's name less a trailing _N; the nodes
            # left in the top-level graph are the non-delegated ones.
            for n in gm.graph.nodes:
                if n.op != "call_function":
                    continue
                op = re.sub(r"_[\d]+$", "", n.name)
                for r in rejections.reasons(n):
                    if r not in reasons.setdefault(op, []):
                        reasons[op].append(r)
    by_op = sorted(by_op_counts.values(), key=lambda e: e["op"])
    for e in by_op:
        if e["non_delegated"] and reasons.get(e["op"]):
            e["reasons"] = sorted(reasons[e["op"]])
    return {**totals, "by_operator": by_op}
