"""Plots of the reports: matplotlib (imported on first use) on the headless backend, rendered to inline SVG.

SVG ids are salted with a fixed string and the date is left out, so the same
data gives the same bytes.
"""

from __future__ import annotations

import io
import re
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from fabricsim.outputs.report.html import figure

__all__ = [
    "bar_plot", "cdf_points", "log_scale", "plain", "pyplot", "step_plot", "step_points", "svg", "time_unit",
]

#: Columns a plotted series is reduced to across its x range: several per
#: point of a 10-inch plot, more than a pixel's worth even when zoomed in a
#: few times (the throughput plots already sum their bins to at most 2,000).
PLOT_COLUMNS = 2000

#: Rows of the fraction axis (0 to 1) a CDF is reduced to.
CDF_ROWS = 1000


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
    # Tick labels carry their whole value: never "+1e2" or "1e-6+1.866e-2" beside the axis.
    matplotlib.rcParams["axes.formatter.useoffset"] = False
    return plt


#: A linear axis spans at least this fraction of the magnitude of its values, so
#: noise of a few parts per million on a constant is not drawn as a zig-zag.
MIN_RELATIVE_SPAN = 0.02


def readable_axes(fig: Any) -> None:
    """Axes a reader can trust at a glance: a log axis over less than a decade
    becomes linear (no "1.001 x 10^0" ticks), and a linear axis whose values
    vary by less than :data:`MIN_RELATIVE_SPAN` of their magnitude is widened
    around them to that span (a flat line is drawn flat)."""
    for ax in fig.axes:
        if not ax.has_data():
            continue
        for axis, get, put, scale, setscale in (
            ("x", ax.get_xlim, ax.set_xlim, ax.get_xscale, ax.set_xscale),
            ("y", ax.get_ylim, ax.set_ylim, ax.get_yscale, ax.set_yscale),
        ):
            lo, hi = sorted(get())
            if scale() == "log" and lo > 0 and hi / lo < 10:
                setscale("linear")
                ax.autoscale(axis=axis)
                lo, hi = sorted(get())
            if scale() != "linear":
                continue
            centre = (lo + hi) / 2
            half = MIN_RELATIVE_SPAN * abs(centre) / 2
            if centre != 0 and hi - lo < 2 * half:
                put(centre - half, centre + half)


_SVG_SIZE = re.compile(r'<svg([^>]*?) width="[^"]*" height="[^"]*" viewBox="[^"]*"')


def _fix_titles(fig: Any) -> list[Any]:
    """The axes of ``fig`` whose titles matplotlib places automatically, now
    placed at the top of their axes (y = 1) instead.

    Automatic placement measures, on every draw, whether something sits above
    the axes that the title must clear (tick labels on top, the y axis's
    offset text such as "1e6", twin or inset axes), and measuring the y axis
    updates all its ticks once more: about a sixth of a report's plotting on
    the 100k-flow run. With nothing there it leaves the title at y = 1, so
    :func:`svg` fixes it there and draws again the rare figure where
    :func:`_title_could_move` says it could have moved.
    """
    fixed = [ax for ax in fig.axes if getattr(ax, "_autotitlepos", None) is True]
    for ax in fixed:
        ax._autotitlepos = False  # matplotlib's own switch, turned off by set_title(y=...)
    return fixed


def _title_could_move(ax: Any, renderer: Any) -> bool:
    """Whether matplotlib's automatic placement could have put a title of
    ``ax`` anywhere but y = 1 (``Axes._update_title_position``), from the
    drawn figure; errs towards yes."""
    groups = getattr(ax.figure, "_align_label_groups", None)
    twins = getattr(ax, "_twinned_axes", None)
    if groups is None or twins is None or ax.child_axes:
        return True
    if set(twins.get_siblings(ax)) != {ax} or set(groups["title"].get_siblings(ax)) != {ax}:
        return True
    if ax.xaxis.get_ticks_position() in ("top", "unknown") or ax.xaxis.get_label_position() == "top":
        return True
    offset = ax.yaxis.offsetText
    if offset.get_visible() and offset.get_text():
        return True
    if ax.get_title("left") or ax.get_title("right"):
        return True
    return bool(ax.title.get_text()) and ax.title.get_window_extent(renderer).ymin < ax.bbox.ymax


def svg(fig: Any) -> str:
    """``fig`` as an inline ``<svg>`` element cropped to what it draws (as
    ``bbox_inches="tight"`` with its default padding); the figure is closed.

    The figure is drawn once: the box around what was drawn is taken when the
    drawing ends and becomes the SVG's ``viewBox``, with a white background
    under it. (``bbox_inches="tight"`` draws the figure twice, once to find
    that box, and tick and text layout are most of a plot's cost.) Titles are
    placed without measuring the axes again (:func:`_fix_titles`), in the
    same place as matplotlib would put them.
    """
    import matplotlib

    found: list[Any] = []
    readable_axes(fig)
    fixed = _fix_titles(fig)
    moved: list[Any] = []

    def drawn(event: Any) -> None:
        found.append(fig.get_tightbbox(event.renderer))
        moved[:] = [ax for ax in fixed if _title_could_move(ax, event.renderer)]

    cid = fig.canvas.mpl_connect("draw_event", drawn)
    try:
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        if moved:  # drawn again with matplotlib's own placement
            for ax in moved:
                ax._autotitlepos = True
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None})
    finally:
        fig.canvas.mpl_disconnect(cid)
    height_in = fig.get_size_inches()[1]
    pyplot().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    if not found:
        return text
    box = found[-1].padded(matplotlib.rcParams["savefig.pad_inches"])
    x, y, w, h = (round(v * 72, 3) for v in (box.x0, height_in - box.y1, box.width, box.height))
    size = f'width="{w:g}pt" height="{h:g}pt" viewBox="{x:g} {y:g} {w:g} {h:g}"'
    text, count = _SVG_SIZE.subn(lambda m: f"<svg{m.group(1)} {size}", text, count=1)
    if count:
        head_end = text.index(">") + 1
        text = (text[:head_end] + f'\n <rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="#ffffff"/>'
                + text[head_end:])
    return text


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_MATH_LABEL = re.compile(r"\$\\mathdefault\{(.*)\}\$")


def _plain_power(label: str) -> str:
    """A log axis label ``$\\mathdefault{2\\times10^{-3}}$`` as plain text, "2×10⁻³"
    (matplotlib lays out math text far more slowly than text); others as they are."""
    m = _MATH_LABEL.fullmatch(label)
    if m is None:
        return label
    body = re.sub(r"\^\{(-?\d+)\}", lambda e: e.group(1).translate(_SUPERSCRIPT), m.group(1))
    body = body.replace("\\times", "×")
    return label if "\\" in body or "{" in body or "^" in body else body


def log_scale(ax: Any, which: str = "x") -> None:
    """A log ``which`` axis of ``ax`` ("x" or "y") whose tick labels are
    matplotlib's usual powers of ten (the same ticks, the same labels), written
    as plain text with superscript digits instead of math text."""
    from matplotlib.ticker import LogFormatterSciNotation

    class PlainLogFormatter(LogFormatterSciNotation):
        def __call__(self, x: float, pos: Any = None) -> str:
            return _plain_power(super().__call__(x, pos))

    getattr(ax, f"set_{which}scale")("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_formatter(PlainLogFormatter(10))
    axis.set_minor_formatter(PlainLogFormatter(10, labelOnlyBase=False))


def step_points(x: Any, y: Any, columns: int = PLOT_COLUMNS) -> tuple[np.ndarray, np.ndarray]:
    """The points of a step series (``x`` ascending) that a plot of it can
    show: ``x``'s range cut into ``columns`` equal columns, of each column the
    first and the last point and a point at its least and at its greatest
    ``y`` (the first such). The first and last points of the series and every
    extreme are kept exactly; between two kept points the drawn line stays
    within its column's least and greatest values. At most ``4 * columns``
    points; a series with no more points than that is returned as it is."""
    x = np.asarray(x)
    y = np.asarray(y)
    n = len(x)
    if n <= 4 * columns or not np.all(np.isfinite(y)):
        return x, y
    xf = x.astype(np.float64)
    lo, hi = xf[0], xf[-1]
    if not hi > lo:
        return x, y
    col = np.minimum(((xf - lo) * (columns / (hi - lo))).astype(np.int64), columns - 1)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(col)) + 1))
    ends = np.append(starts[1:], n)
    group = np.repeat(np.arange(len(starts)), ends - starts)
    keep = np.zeros(n, dtype=bool)
    keep[starts] = True
    keep[ends - 1] = True
    for reduce in (np.minimum, np.maximum):
        hits = np.flatnonzero(y == reduce.reduceat(y, starts)[group])
        first = hits[np.concatenate(([True], group[hits][1:] != group[hits][:-1]))]
        keep[first] = True
    return x[keep], y[keep]


def cdf_points(
    values: Any, quantiles: Sequence[float] = (0.5, 0.99), columns: int = PLOT_COLUMNS, rows: int = CDF_ROWS,
    log: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Points ``(x, fraction)`` of the empirical CDF of ``values`` for a step
    plot (``where="post"``): the sorted values, and the fraction of values at
    or below each. Of a long sample, only the points where the curve moves
    into another of ``columns`` columns of its x range (log-spaced when
    ``log``) or another of ``rows`` rows of the fraction axis: the first and
    last point of each column and of each row, so between two kept points the
    drawn curve is within one cell of the exact one. The first and last
    points, and the points of the ``quantiles`` as the FCT tables compute them
    (the value at or above the quantile, numpy's ``method="higher"``), are
    always kept. At most ``2 * (columns + rows) + len(quantiles)`` points."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = len(x)
    frac = np.arange(1, n + 1) / n if n else np.zeros(0)
    if n <= 2 * (columns + rows):
        return x, frac
    pos = np.log(np.maximum(x, np.finfo(np.float64).tiny)) if log else x
    lo, hi = pos[0], pos[-1]
    span = hi - lo
    col = (np.minimum(((pos - lo) * (columns / span)).astype(np.int64), columns - 1) if span > 0
           else np.zeros(n, dtype=np.int64))
    row = np.minimum(np.arange(n) * rows // n, rows - 1)
    keep = np.zeros(n, dtype=bool)
    for cell in (col, row):
        change = np.flatnonzero(np.diff(cell)) + 1
        keep[change] = True  # first of a column or row
        keep[change - 1] = True  # last of the one before
    keep[0] = keep[-1] = True
    for q in quantiles:
        keep[int(np.ceil(q * (n - 1)))] = True
    return x[keep], frac[keep]


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
        times, values = step_points(times, values)
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
