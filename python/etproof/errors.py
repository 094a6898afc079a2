"""Typed errors. Each carries a cause and a remedy; str() is "cause (remedy: ...)".

Also the export stages' vocabulary (EXPORT_STAGES, STAGE_REMEDY, stage_remedy, in_stage), the
one-line form of any exception (first_line, error_line, lead_line) and its whole form
(error_detail: type, whole message, the operators and dtypes it names, where it was raised and
the graph node being handled; summary_line), and ExecuTorch's own words: its error codes' names
(name_error_codes) and the lines of its runtime log that explain a failure (runtime_log_lines,
executorch_said). An error's ``kind`` is its word in docs/errors.md; the two that are
also export-report statuses are etproof.status's. Imports only etproof.status: every module may
use it.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import re
import traceback

from etproof.status import EXPORT_FAILED, EXPORT_REFUSED

EXPORT_STAGES = ("export", "quantize", "lower", "serialize", "goldens")


def command_name() -> str:
    """How the user called the export half: ``$ETPROOF_PROG`` (the C++ ``etproof`` sets it to its
    own path when it runs the export half: ``build/etproof``), else ``python -m etproof``. Used in
    usage lines and remedies, so that they name the command the user typed."""
    return os.environ.get("ETPROOF_PROG") or "python -m etproof"

# The remedy of an ExportError at each stage where the failure itself says nothing better.
STAGE_REMEDY = {
    "goldens": "the model must run eagerly on every golden input and return the named outputs",
    "export": "make the model traceable by torch.export (no data-dependent Python control flow, "
              "no unsupported ops); see the torch.export error above",
    "quantize": "quantization failed for this model; try the fp32 recipe or another quantized "
                "recipe",
    "lower": "the backend could not lower or run this model; try another backend",
    "serialize": "ExecuTorch could not serialize the program or the bundle could not be written; "
                 "check disk space and permissions of the output directory",
}


class EtproofError(Exception):
    """Base error: ``cause`` (what happened) and ``remedy`` (what to do about it).

    ``stage`` is None except where an export stage applies (ExportError, and InvalidArgument
    raised by export_model, which reports stage "export").
    """

    kind = "error"

    def __init__(self, cause: str, remedy: str = "", *, stage: str | None = None,
                 detail: dict | None = None):
        self.cause = str(cause)
        self.remedy = str(remedy)
        self.stage = stage
        # The whole error of the library that failed (error_detail), where one did; the export
        # report keeps it as "error" and the terminal shows its message in full.
        self.detail = detail
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.cause} (remedy: {self.remedy})" if self.remedy else self.cause


class ExportError(EtproofError):
    """An export failed at ``stage``: "export" | "quantize" | "lower" | "serialize" | "goldens"."""

    kind = EXPORT_FAILED

    def __init__(self, cause: str, remedy: str = "", *, stage: str = "export",
                 detail: dict | None = None):
        if stage not in EXPORT_STAGES:
            raise ValueError(f"unknown export stage {stage!r}")
        super().__init__(cause, remedy, stage=stage, detail=detail)


class QuantizationError(ExportError):
    """Quantization failed or had no effect (stage "quantize")."""

    def __init__(self, cause: str, remedy: str = ""):
        super().__init__(cause, remedy, stage="quantize")


class NothingToQuantize(QuantizationError):
    """A quantized recipe that quantized nothing: the quantizer annotates no operator of the
    model (no quantize/dequantize op after convert). Not a failure of the toolchain but a recipe
    that does not apply, so it is a refusal: recorded as ``export-refused``, like a backend whose
    toolchain is absent, and it never fails a matrix by itself."""

    kind = EXPORT_REFUSED


class ReferencesDisagree(ExportError):
    """The float32 golden and the float64 truth of a golden case are further apart than float32
    rounding explains (stage "goldens"; etproof.export.references.inconsistent_cases): they come from
    different model states, so no bound can judge a program against them. Recorded as
    ``export-failed``; ``kind`` names the cause."""

    kind = "references-disagree"

    def __init__(self, cause: str, remedy: str = ""):
        super().__init__(cause, remedy, stage="goldens")


class GoldenInvalid(ExportError):
    """A golden case that would certify nothing (stage "goldens"): every floating input is
    entirely non-finite, or a floating output of the eager model has no finite value (NaN
    matches NaN, and cosine and SQNR skip non-finite values, so a program that emits only NaN
    would agree with it). Recorded as ``export-failed``; ``kind`` names the cause."""

    kind = "golden-invalid"

    def __init__(self, cause: str, remedy: str = ""):
        super().__init__(cause, remedy, stage="goldens")


class ManifestError(EtproofError):
    """A manifest document is invalid; ``field`` names the offending field (dotted path)."""

    kind = "manifest-invalid"

    def __init__(self, cause: str, remedy: str = "", *, field: str | None = None):
        self.field = field
        super().__init__(cause, remedy)


class InvalidArgument(EtproofError):
    """A caller passed something etproof does not accept (unknown backend/recipe, bad name...)."""

    kind = "invalid-argument"


def first_line(e: BaseException) -> str:
    """The first non-blank line of ``str(e)`` (with the lines after it while it ends with ":",
    lead_line), at most 500 characters; where the text is empty, the exception's own one-line
    form (traceback.format_exception_only), else its type name."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    if lines:
        return lead_line(lines)
    return "".join(traceback.format_exception_only(type(e), e)).strip()[:500] or type(e).__name__


def lead_line(lines: list[str], limit: int = 500) -> str:
    """The one-line form of a message's non-blank ``lines``: the first, joined with those after
    it while the text so far ends with ":" (at most 6 lines: a header such as OpenVINO's "Check
    '...' failed at FILE:LINE:" / "FrontEnd API failed with GeneralFailure:" whose informative
    part is the next line). At most ``limit`` characters; where it is longer, the headers are
    shortened ("…") before the last line is, so the informative line is never the one cut."""
    parts = [lines[0]]
    for line in lines[1:6]:
        if not parts[-1].endswith(":"):
            break
        parts.append(line)
    text = " ".join(parts)
    if len(text) <= limit:
        return text
    last = parts[-1][:limit]
    room = limit - len(last) - 2  # "… " before the last line
    head = " ".join(parts[:-1])
    return last if room < 20 or len(parts) == 1 else f"{head[:room]}… {last}"


def error_line(e: BaseException) -> str:
    """``TYPE: FIRST LINE`` (first_line) of an exception that is not an EtproofError."""
    return f"{type(e).__name__}: {first_line(e)}"


# ExecuTorch's error codes (runtime/core/error.h of ExecuTorch 1.5.1): the name said beside a code.
EXECUTORCH_ERRORS = {
    0x00: "Ok", 0x01: "Internal", 0x02: "InvalidState", 0x03: "EndOfMethod",
    0x04: "AlreadyLoaded", 0x10: "NotSupported", 0x11: "NotImplemented",
    0x12: "InvalidArgument", 0x13: "InvalidType", 0x14: "OperatorMissing",
    0x15: "RegistrationExceedingMaxKernels", 0x16: "RegistrationAlreadyRegistered",
    0x20: "NotFound", 0x21: "MemoryAllocationFailed", 0x22: "AccessFailed",
    0x23: "InvalidProgram", 0x24: "InvalidExternalData", 0x25: "OutOfResources",
    0x30: "DelegateInvalidCompatibility", 0x31: "DelegateMemoryAllocationFailed",
    0x32: "DelegateInvalidHandle"}
_ERROR_CODE = re.compile(r"\berror:? (0x[0-9A-Fa-f]+)\b(?! \()")


def name_error_codes(text: str) -> str:
    """``text`` with each ExecuTorch error code it gives as ``error 0xNN`` (or ``error: 0xNN``)
    followed by the code's name: ``failed with error 0x12 (InvalidArgument)``."""
    def named(m: re.Match) -> str:
        name = EXECUTORCH_ERRORS.get(int(m.group(1), 16))
        return f"{m.group(0)} ({name})" if name else m.group(0)
    return _ERROR_CODE.sub(named, text)


# ExecuTorch's runtime log lines: "[method.cpp:822] Missing operator: [0] aten::bucketize...".
_LOG_MARK = r"\[[\w.]+\.(?:cpp|cc|c|h|mm?):\d+\] "
_LOG_LINE = re.compile("^" + _LOG_MARK)
# What a log line that explains a failure says; a line saying none of it (method.cpp's "arg 0
# with type id 1" after a failed kernel call, a delegate's progress) is not about the failure.
_FAILURE_WORDS = re.compile(
    r"missing|not found|error|fail|unsupported|not supported|cannot|unable|expected|invalid"
    r"|mismatch|must\b|out of (?:range|bounds|memory)|overflow|exceed|illegal|incompatible",
    re.IGNORECASE)
# Startup chatter that says "fail" about nothing the program needs (XNNPACK's CPU probe).
_NOT_FAILURES = ("cpuinfo_utils.cpp",)
# One item of a list ExecuTorch logs a line each ("[tensor_util_portable.cpp:68]   dim_order(1): 2").
_LIST_ITEM = re.compile(r"^(\w+)\((\d+)\):\s*(\S+)$")


def runtime_log_lines(text: str) -> list[str]:
    """ExecuTorch's runtime log lines in ``text`` that explain a failure, in order, each once
    (as ``[FILE:LINE] MESSAGE``, at most 500 characters): a missing operator, a failed check and
    what it expected, the kernel or delegate call that failed and its status. A list logged an
    item a line is folded into the line before it ("Expected tensor to have default or channels
    last dim order, but got dim_order 0,2,1,3"); a trailing ":" with nothing after it (ExecuTorch's
    "Check failed (COND): ") is dropped. Startup chatter (_NOT_FAILURES) and lines that report no
    failure are left out. C output that ran on without a newline is split at each ``[FILE:LINE]``."""
    kept: list[list] = []  # [prefix, message, {list name: [items]}]
    last_kept = False
    for line in text.splitlines():
        for part in re.split(f"(?={_LOG_MARK})", line):
            m = _LOG_LINE.match(part.strip())
            if not m:
                continue
            prefix, msg = m.group(0).strip(), part.strip()[m.end():].strip()
            item = _LIST_ITEM.match(msg)
            if item:
                if last_kept:
                    kept[-1][2].setdefault(item.group(1), []).append(item.group(3))
                continue
            last_kept = bool(_FAILURE_WORDS.search(msg)) and not prefix.startswith(
                tuple(f"[{n}" for n in _NOT_FAILURES))
            if last_kept:
                kept.append([prefix, msg.rstrip(":").rstrip(), {}])
    out: list[str] = []
    seen: set[str] = set()
    for prefix, msg, lists in kept:
        msg += "".join(f" {name} {','.join(items)}" for name, items in lists.items())
        if msg not in seen:
            seen.add(msg)
            out.append(f"{prefix} {msg}"[:500])
    return out


def executorch_said(lines: list[str], limit: int = 600, rest: str = "export-log.txt") -> str:
    """``ExecuTorch said: A; B; C``: the messages of runtime_log_lines' ``lines`` (without their
    ``[FILE:LINE]``), in order, at most about ``limit`` characters: where they run longer, the
    first that fit and the last (the call that failed) are kept, and how many lines were left
    out between is said with where they are (``rest``). Empty for no lines."""
    msgs = [_LOG_LINE.sub("", ln, count=1) for ln in lines]
    if not msgs:
        return ""
    if len("; ".join(msgs)) <= limit:
        return "ExecuTorch said: " + "; ".join(msgs)
    last = msgs[-1][:limit // 2]
    room = limit - len(last)
    first: list[str] = []
    for msg in msgs[:-1]:
        if len("; ".join(first + [msg])) > room - 60:
            break
        first.append(msg)
    left = len(msgs) - 1 - len(first)
    gap = f"({left} more line{'s' if left != 1 else ''} in {rest})"
    return "ExecuTorch said: " + "; ".join(first + [gap, last])


# The longest message error_detail keeps (a graph dump can run to megabytes); the cut is said.
MAX_MESSAGE = 20000

# An operator as ExecuTorch, torch and the partitioners spell it: aten.abs.default,
# aten::bucketize.Tensor_out, quantized_decomposed.quantize_per_tensor.default, ...
_OP_NAMESPACES = ("aten", "quantized_decomposed", "dim_order_ops", "executorch_prim", "prims",
                  "torchao", "llama", "cadence", "tosa", "et_vk", "coreml", "mlx", "higher_order")
_OP = re.compile(r"\b(?:torch\.ops\.)?(?:" + "|".join(_OP_NAMESPACES)
                 + r")(?:\.|::)[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?")
# ExecuTorch's edge verifier: "Operator: <EdgeOpOverload: aten.abs.default>: schema = ... with
# args: {'self': torch.complex64, '__ret_0': torch.float32}"
_EDGE_OP_ARGS = re.compile(r"<EdgeOpOverload: ([^>]+)>[^\n]*?with args: \{([^}]*)\}")
_DTYPE = re.compile(r"\btorch\.(complex(?:32|64|128)|float(?:16|32|64)|bfloat16|u?int(?:8|16|32|64)"
                    r"|bool|float8_\w+)")
_COMPLEX = re.compile(r"\b(?:torch\.)?complex(?:32|64|128)\b|ComplexFloat|ComplexDouble")


def _short_path(path: str) -> str:
    """A library file as its package path (executorch/exir/graph_module.py), else as given."""
    marker = os.sep + "site-packages" + os.sep
    return path.split(marker, 1)[1] if marker in path else path


def _node_text(node) -> str:
    """``NAME (TARGET)`` of a torch.fx Node, with the model's source line where its stack trace
    names a real file (not generated code)."""
    target = getattr(node, "target", None)
    if target is None or isinstance(target, str):
        shown = target
    elif getattr(target, "namespace", None) == "higher_order":  # torch.cond, torch.while_loop
        shown = f"torch.ops.higher_order.{target.name()}"
    elif str(target).startswith("<"):  # a Python function: its qualified name, not its repr
        name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
        mod = getattr(target, "__module__", None)
        shown = f"{mod}.{name}" if name and mod and mod not in (
            "builtins", "_operator", "operator") else name
    else:
        shown = str(target)
    text = f"{getattr(node, 'name', '?')}" + (f" ({shown})" if shown else "")
    meta = getattr(node, "meta", None)
    stack = meta.get("stack_trace") if isinstance(meta, dict) else None
    if isinstance(stack, str):
        files = re.findall(r'File "([^"<][^"]*)", line (\d+), in (\S+)', stack)
        if files:
            f, line, fn = files[-1]
            text += f" from {f}:{line} in {fn}"
    return text


def _frames(e: BaseException):
    tb = e.__traceback__
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def _node_being_handled(e: BaseException) -> str | None:
    """The torch.fx Node in the innermost frame that holds one (a local named ``node`` first):
    the graph node ExecuTorch or the partitioner was handling when it raised."""
    for tb in reversed(_frames(e)):
        try:
            local = tb.tb_frame.f_locals
        except Exception:  # noqa: BLE001 - a frame whose locals cannot be read names nothing
            continue
        # (the graph's output node is what a loop over the nodes leaves behind, not a node
        # being handled)
        found = [v for k, v in local.items() if type(v).__name__ == "Node"
                 and type(v).__module__ == "torch.fx.node" and getattr(v, "op", "") != "output"]
        if not found:
            continue
        named = local.get("node")
        node = named if any(named is v for v in found) else found[0]
        try:
            return _node_text(node)
        except Exception:  # noqa: BLE001
            return None
    return None


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _user_frame(frames: list) -> tuple | None:
    """Of a node's stack trace (``(file, line, function)``, outermost first), the user's own line:
    the innermost frame outside etproof (whose method wrapper, etproof.contract.program's
    MethodModule, calls the user's method) and outside installed packages (torch's modules); the
    innermost outside etproof where every other frame is in a package; None for none."""
    ours = [f for f in frames if not os.path.abspath(f[0]).startswith(_PACKAGE)]
    theirs = [f for f in ours if "site-packages" not in f[0] and "dist-packages" not in f[0]]
    pick = theirs or ours
    return pick[-1] if pick else None


def _def_name(path: str, line: int, name: str) -> str:
    """The function the source line ``line`` of ``path`` is in (the nearest ``def`` above it,
    less indented), else ``name``: a method of several is traced as ``forward`` under the user's
    own code (etproof.contract.program.method_module), and is named here as the user wrote it."""
    text = linecache.getline(path, line)
    indent = len(text) - len(text.lstrip())
    for n in range(line - 1, 0, -1):
        src = linecache.getline(path, n)
        stripped = src.lstrip()
        if stripped and len(src) - len(stripped) < indent:
            m = re.match(r"(?:async\s+)?def\s+(\w+)", stripped)
            if m:
                return m.group(1)
            indent = len(src) - len(stripped)
    return name


def error_detail(e: BaseException) -> dict:
    """The whole of an exception as the export report keeps it:

    ``type`` (qualified), ``message`` (all of str(e), cut at MAX_MESSAGE and said), ``where``
    (the innermost frame: ``FILE:LINE in FUNCTION``, with its source line as ``source``),
    ``operators`` (every operator the message names, in order, where it names any), ``dtypes``
    (per operator of ExecuTorch's dtype check, ``{"aten.abs.default": "self: complex64 ->
    float32"}``), ``model_source`` (the model's line the message's stack trace names) and,
    where the message names no operator, ``node`` (the graph node being handled, where a frame
    holds one).
    """
    t = type(e)
    mod = t.__module__
    d: dict = {"type": t.__qualname__ if mod in ("builtins", "__main__") else
               f"{mod}.{t.__qualname__}"}
    msg = str(e)
    if len(msg) > MAX_MESSAGE:
        msg = msg[:MAX_MESSAGE] + f"\n... ({len(msg) - MAX_MESSAGE} more characters cut)"
    d["message"] = msg
    frames = _frames(e)
    if frames:
        tb = frames[-1]
        code = tb.tb_frame.f_code
        d["where"] = f"{code.co_filename}:{tb.tb_lineno} in {code.co_name}"
        src = linecache.getline(code.co_filename, tb.tb_lineno).strip()
        if src:
            d["source"] = src
    ops: list[str] = []
    for m in _OP.finditer(msg):
        op = m.group(0).replace("torch.ops.", "", 1)
        if msg[m.end():m.end() + 1] == "(":  # a schema ("aten::abs(Tensor self)"), not a use
            continue
        if op not in ops:
            ops.append(op)
    # aten::abs where aten.abs.default is named too is the same operator
    ops = [op for op in ops if "::" not in op or not any(
        o.startswith(op.replace("::", ".") + ".") for o in ops)]
    if ops:
        d["operators"] = ops
    dtypes = {}
    for op, args in _EDGE_OP_ARGS.findall(msg):
        pairs = re.findall(r"'([^']+)': torch\.(\w+)", args)
        ins = [f"{k}: {v}" for k, v in pairs if not k.startswith("__ret")]
        outs = [v for k, v in pairs if k.startswith("__ret")]
        dtypes[op.strip()] = ", ".join(ins) + (f" -> {', '.join(outs)}" if outs else "")
    if dtypes:
        d["dtypes"] = dtypes
    source = _user_frame(re.findall(r'File "([^"<][^"]*)", line (\d+), in (\S+)',
                                    msg[msg.find("stack trace:"):] if "stack trace:" in msg else ""))
    if source:
        d["model_source"] = "{}:{} in {}".format(source[0], source[1],
                                                 _def_name(source[0], int(source[1]), source[2]))
    if not ops:  # where the message names no operator, the node being handled may
        node = _node_being_handled(e)
        if node:
            d["node"] = node
    return d


def summary_line(e: BaseException, detail: dict | None = None) -> str:
    """``TYPE: FIRST LINE`` where the first line says what failed; else completed from the rest:
    a first line that stops at ":" is followed by the lines after it up to the first that does
    not (lead_line) where the next one stops at ":" too (a chain of headers: OpenVINO's "...
    failed at FILE:LINE:" / "FrontEnd API failed with GeneralFailure:" / what failed), else by
    the operators (and dtypes) the message names, else by the next line; an empty message gets
    where it was raised (``raised at FILE:LINE in FUNCTION: SOURCE``) and the node being
    handled."""
    d = detail if detail is not None else error_detail(e)
    name = type(e).__name__
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    head = lines[0][:500] if lines else ""
    if not head or head.endswith(":"):
        named = [f"{op} ({d['dtypes'][op]})" if op in d.get("dtypes", {}) else op
                 for op in d.get("operators", [])]
        if len(lines) > 1 and lines[1].endswith(":"):
            head = lead_line(lines)
        elif named:
            head = f"{head} {', '.join(named)}".strip()
            if d.get("model_source"):
                head += f" at {d['model_source']}"
        elif head and len(lines) > 1:
            head = lead_line(lines)
    if not lines:
        where = d.get("where")
        if where:
            path, _, rest = where.rpartition(":")
            head = f"(no message) raised at {_short_path(path)}:{rest}"
            if d.get("source"):
                head += f": {d['source'][:200]}"
        else:
            head = "(no message)"
        if d.get("node"):
            head += f"; while handling node {d['node']}"
    return f"{name}: {head}"


def stage_remedy(stage: str, recipe: str | None = None, detail: dict | None = None) -> str:
    """The remedy of a failure at ``stage``: STAGE_REMEDY, made specific where the error names an
    operator (rewrite or decompose it, or pick a backend that supports it), a complex dtype
    (compute from the real and imaginary parts) or nothing (where it was raised: a limitation or bug
    of the lowering at that frame). Never suggests the fp32 recipe to an fp32 export (nor to one
    whose recipe is not known)."""
    d = detail or {}
    other_recipe = (" or the fp32 recipe" if recipe is not None and recipe != "fp32"
                    and stage in ("lower", "quantize") else "")
    ops = d.get("operators", [])
    text = d.get("message", "")
    if stage in ("lower", "serialize") and _COMPLEX.search(text):
        what = ", ".join(f"{op} ({d['dtypes'][op]})" if op in d.get("dtypes", {}) else op
                         for op in ops) or "an operator"
        return (f"{what} on a complex tensor cannot be lowered by ExecuTorch: compute it from "
                "the real and imaginary parts instead (for |z| of torch.fft.rfft: r = "
                "torch.view_as_real(z); (r * r).sum(-1).sqrt()), or keep complex values out of "
                "the model" + other_recipe)
    if stage == "lower" and ops:
        return (f"{ops[0] if len(ops) == 1 else ', '.join(ops)} cannot be lowered for this "
                "backend: rewrite or decompose it in the model into operators the backend "
                "supports, or pick a backend that supports it" + other_recipe)
    if stage == "lower" and not text.strip() and d.get("where"):
        path, _, rest = d["where"].rpartition(":")
        node = f" on node {d['node']}" if d.get("node") else ""
        return (f"the lowering failed an internal check at {_short_path(path)}:{rest}{node} "
                "(a construct the backend's lowering does not handle, e.g. several torch.cond "
                "calls): simplify that part of the model or pick another backend"
                + other_recipe + "; report it upstream with the frame named above")
    if stage == "lower":
        return STAGE_REMEDY["lower"] + other_recipe
    return STAGE_REMEDY[stage]


@contextlib.contextmanager
def in_stage(stage: str, recipe: str | None = None):
    """Re-raises anything but an EtproofError as ExportError(stage): ``STAGE failed: TYPE:
    SUMMARY`` (summary_line), the whole error kept as ``detail`` (error_detail) and the remedy of
    stage_remedy (``recipe``: the recipe being exported, so the remedy never suggests it).
    An ExportError raised inside from a library's exception (``raise ... from e``) without a
    ``detail`` gets that exception's. Interrupts (BaseException) pass through unchanged."""
    try:
        yield
    except ExportError as e:
        cause = e.__cause__
        if e.detail is None and isinstance(cause, Exception) and not isinstance(
                cause, EtproofError):
            e.detail = error_detail(cause)
        raise
    except EtproofError:
        raise
    except Exception as e:  # noqa: BLE001 - every failure becomes a typed, staged error
        detail = error_detail(e)
        raise ExportError(f"{stage} failed: {summary_line(e, detail)}",
                          stage_remedy(stage, recipe, detail), stage=stage,
                          detail=detail) from e
