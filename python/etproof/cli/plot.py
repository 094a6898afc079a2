"""Pictures of the runtime half's reports, drawn with matplotlib (`etproof attribute --plot`).

``python -m etproof plot-attribution REPORT.json... --out FILE.svg|png`` reads what
``etproof attribute --json`` prints (one attribution object, or a list of them) and draws the
SQNR of every tap against its depth, one line per column of the same model: the measured SQNR
(solid, a dot per tap), the SQNR floor of its bound at each tap (dashed, same colour), and the
earliest drifting tap marked with its module path. The runtime half calls it for ``--plot``.

An SQNR of +inf (the tap is bit-identical to its reference) is drawn at float32's resolution,
FLOAT32_RESOLUTION_DB, and said in the legend; no float32 value can show more.

No export reads this module (etproof.export.cache.NOT_EXPORT_INPUTS), and matplotlib is imported only
inside plot_attribution.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from etproof.errors import InvalidArgument

__all__ = ["FLOAT32_RESOLUTION_DB", "load_attributions", "plot_attribution"]

# cpp/include/etproof/replay/attribute.h kFloat32ResolutionDb: 6.02 * 24 + 1.76 dB, the SQNR of a value
# rounded once to float32's 24-bit significand.
FLOAT32_RESOLUTION_DB = 146.2

SUFFIXES = (".svg", ".png")
_REMEDY = "pass what `etproof attribute --json BUNDLE` printed, saved to a file"


def _db(v) -> float:
    """A JSON number as etproof writes it (non-finite values are the strings "inf", "-inf",
    "nan") as a float; +inf becomes FLOAT32_RESOLUTION_DB."""
    if isinstance(v, str):
        v = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}.get(v, math.nan)
    v = float(v)
    return min(v, FLOAT32_RESOLUTION_DB) if not math.isnan(v) else v


def load_attributions(paths) -> list[dict]:
    """The attribution objects in ``paths`` (each file one object or a list of them).

    Raises InvalidArgument naming the file for a file that cannot be read, is not JSON, or holds
    something without ``layers`` (not an attribution).
    """
    out: list[dict] = []
    for p in paths:
        try:
            doc = json.loads(Path(p).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise InvalidArgument(f"{p}: cannot read an attribution report: {e}", _REMEDY) from None
        for i, a in enumerate(doc if isinstance(doc, list) else [doc]):
            if not isinstance(a, dict) or not isinstance(a.get("layers"), list) or not a["layers"]:
                raise InvalidArgument(f"{p}: entry {i} is not an attribution with layers", _REMEDY)
            out.append(a)
    if not out:
        raise InvalidArgument("no attribution to plot", _REMEDY)
    return out


def plot_attribution(attributions: list[dict], out: Path) -> Path:
    """Draws ``attributions`` (load_attributions) into ``out`` (.svg or .png), written whole or
    not at all (a temporary file renamed into place). Returns ``out``.

    x: the tap's position in graph order (0 = first tap); y: SQNR in dB against the reference
    each tap was judged by. Raises InvalidArgument for another suffix.
    """
    out = Path(out)
    if out.suffix.lower() not in SUFFIXES:
        raise InvalidArgument(f"{out}: a plot is written as .svg or .png, not {out.suffix or 'no suffix'!r}",
                              "name the file FILE.svg or FILE.png")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.8), dpi=110)
    identical = False
    longest: list[dict] = []
    for n, a in enumerate(attributions):
        colour = f"C{n % 10}"
        layers = a["layers"]
        if len(layers) > len(longest):
            longest = layers
        x = [int(layer.get("index", i)) for i, layer in enumerate(layers)]
        y = [_db(layer["report"]["sqnr_db"]) for layer in layers]
        identical = identical or any(v == FLOAT32_RESOLUTION_DB for v in y)
        label = f"{a.get('backend', '?')}/{a.get('recipe', '?')} ({a.get('precision', '?')})"
        ax.plot(x, y, "-o", color=colour, markersize=3.5, label=label)
        floor = [_db(layer.get("min_sqnr_db", "-inf")) for layer in layers]
        if any(math.isfinite(f) for f in floor):
            ax.plot(x, [f if math.isfinite(f) else math.nan for f in floor], "--", color=colour,
                    linewidth=1, label=f"{label}: bound (SQNR floor)")
        first = a.get("earliest_drift")
        if isinstance(first, int) and 0 <= first < len(layers):
            layer = layers[first]
            what = layer.get("module_path") or layer.get("op", "")
            tag = "culprit" if a.get("culprit") else "first over the bound"
            ax.plot([x[first]], [y[first]], "X", color="black", markersize=10, zorder=5)
            ax.annotate(f"{what} ({tag})", (x[first], y[first]), textcoords="offset points",
                        xytext=(6, -14), fontsize=8)
    if len(longest) <= 40:
        ax.set_xticks([int(layer.get("index", i)) for i, layer in enumerate(longest)])
        ax.set_xticklabels([layer.get("module_path") or layer.get("op", "") for layer in longest],
                           rotation=60, ha="right", fontsize=7)
    ax.set_xlabel("tap, in graph order")
    ax.set_ylabel("SQNR against the reference (dB)")
    models = sorted({str(a.get("model") or a.get("bundle", "")) for a in attributions})
    ax.set_title(f"{', '.join(models)}: error against depth"
                 + (f" (identical taps drawn at {FLOAT32_RESOLUTION_DB} dB)" if identical else ""),
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}{out.suffix}")
    try:
        fig.savefig(tmp)
        os.replace(tmp, out)
    finally:
        plt.close(fig)
        if tmp.exists():
            tmp.unlink()
    return out
