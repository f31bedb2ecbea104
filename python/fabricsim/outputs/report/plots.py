"""Plots of the reports: matplotlib (imported on first use) on the headless backend, rendered to inline SVG.

SVG ids are salted with a fixed string and the date is left out, so the same
data gives the same bytes.
"""

from __future__ import annotations

import io
from typing import Any, Iterable, Optional

from fabricsim.outputs.report.html import figure

__all__ = ["bar_plot", "plain", "pyplot", "step_plot", "svg", "time_unit"]


def plain(text: object) -> str:
    """``text`` shown as it is in a plot: matplotlib reads ``$...$`` as math
    (a node named ``$\\x$`` would fail to render); every dollar is escaped."""
    return str(text).replace("$", r"\$")


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the headless backend, with reproducible SVG ids."""
    import matplotlib  # only reports draw plots: matplotlib is imported when the first one is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "fabricsim"
    return plt


def svg(fig: Any) -> str:
    """``fig`` as an inline ``<svg>`` element; the figure is closed."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    pyplot().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def time_unit(max_ps: float) -> tuple[float, str]:
    """A readable unit for a time axis spanning up to ``max_ps``."""
    for scale, unit in ((1e12, "s"), (1e9, "ms"), (1e6, "us")):
        if max_ps >= 10 * scale:
            return scale, unit
    return 1e3, "ns"


def step_plot(
    name: str, series: Iterable[tuple[str, Any, Any]], scale: float, unit: str, ylabel: str, title: str
) -> str:
    """Step lines of ``(label, times_ps, values)`` over a time axis in ``unit``."""
    fig, ax = pyplot().subplots(figsize=(10, 3.6))
    for label, times, values in series:
        ax.step(times / scale, values, where="post", label=plain(label))
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel(ylabel)
    ax.set_title(plain(title))
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    return figure(name, svg(fig))


def bar_plot(
    name: str,
    labels: list[str],
    values: Any,
    color: str,
    xlabel: str,
    title: str,
    xlim: Optional[tuple[float, float]] = None,
) -> str:
    """Horizontal bars, the first label on top."""
    fig, ax = pyplot().subplots(figsize=(10, 0.3 * len(labels) + 1))
    ax.barh([plain(label) for label in labels[::-1]], values[::-1], color=color)
    ax.set_xlabel(xlabel)
    if xlim is not None:
        ax.set_xlim(*xlim)
    ax.set_title(plain(title))
    ax.grid(alpha=0.3, axis="x")
    return figure(name, svg(fig))
