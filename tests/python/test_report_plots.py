"""The report's plots: long series reduced to what a plot can show (every extreme,
the first and last points and the FCT tables' quantiles kept), the SVG cropped
as ``bbox_inches="tight"`` crops it but drawn once, log axes labelled without
math text."""

import io
import re

import numpy as np
import pytest

from fabricsim.outputs.report import plots
from fabricsim.outputs.report.plots import PLOT_COLUMNS, CDF_ROWS, cdf_points, log_scale, pyplot, step_points, svg


def _series(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.integers(1, 1000, n)).astype(np.int64)
    values = np.abs(np.cumsum(rng.normal(0, 1, n)))  # a random walk: extremes anywhere
    values[n // 3] = values.max() + 50  # an isolated spike, one sample wide
    values[2 * n // 3] = -7.0  # and a dip
    return times, values


def test_step_points_bounds_a_long_series_and_keeps_every_extreme():
    times, values = _series(200_000)
    x, y = step_points(times, values)
    assert len(x) <= 4 * PLOT_COLUMNS < len(times) // 10
    assert np.all(np.diff(x) > 0)
    # Kept points are points of the series, the first and last among them.
    idx = np.searchsorted(times, x)
    assert np.array_equal(times[idx], x) and np.array_equal(values[idx], y)
    assert (x[0], y[0], x[-1], y[-1]) == (times[0], values[0], times[-1], values[-1])
    assert y.max() == values.max() and y.min() == values.min() == -7.0
    # In every column of the plot the drawn line reaches the column's least and greatest value.
    lo, hi = float(times[0]), float(times[-1])
    col = np.minimum(((times - lo) * (PLOT_COLUMNS / (hi - lo))).astype(np.int64), PLOT_COLUMNS - 1)
    kept_col = col[idx]
    for c in np.unique(col)[::97]:
        assert y[kept_col == c].max() == values[col == c].max()
        assert y[kept_col == c].min() == values[col == c].min()
    # The value held at the end of each column is the exact one (the line enters the next column right).
    last_of_col = np.flatnonzero(np.diff(col))
    assert np.all(np.isin(times[last_of_col], x))


def test_step_points_leaves_short_series_alone():
    times, values = _series(4 * PLOT_COLUMNS)
    x, y = step_points(times, values)
    assert np.array_equal(x, times) and np.array_equal(y, values)


def test_cdf_points_bounds_a_long_sample_and_keeps_the_tables_quantiles():
    rng = np.random.default_rng(3)
    fct = rng.lognormal(12, 2, 200_000).astype(np.int64) + 1000
    x, frac = cdf_points(fct)
    assert len(x) <= 2 * (PLOT_COLUMNS + CDF_ROWS) + 2 < len(fct) // 10
    exact_x = np.sort(fct.astype(np.float64))
    n = len(exact_x)
    exact_frac = np.arange(1, n + 1) / n
    assert (x[0], x[-1], frac[-1]) == (exact_x[0], exact_x[-1], 1.0)
    for q in (0.5, 0.99):  # as the FCT tables compute them (outputs/fct.py)
        value = float(np.quantile(fct, q, method="higher"))
        k = int(np.ceil(q * (n - 1)))
        assert value == exact_x[k]
        hits = np.flatnonzero((x == value) & (frac == exact_frac[k]))
        assert hits.size == 1
    # The drawn step curve (where="post") is within one row of the exact one everywhere.
    drawn = frac[np.searchsorted(x, exact_x, side="right") - 1]
    exact = exact_frac[np.searchsorted(exact_x, exact_x, side="right") - 1]
    assert np.max(np.abs(drawn - exact)) <= 1 / CDF_ROWS + 1 / n


def test_cdf_points_of_a_short_sample_are_every_point():
    x, frac = cdf_points([5, 1, 3])
    assert x.tolist() == [1.0, 3.0, 5.0] and frac.tolist() == [1 / 3, 2 / 3, 1.0]


def _figure():
    fig, ax = pyplot().subplots(figsize=(6, 3))
    ax.plot([1, 10, 1000], [0.1, 0.5, 1.0], label="a long label for the legend")
    ax.barh(["a very long bar label that reaches past the figure's left edge"], [3])
    ax.set_title("a title")
    ax.legend()
    return fig


def _view_box(text: str) -> list[float]:
    head = re.search(r"<svg[^>]*>", text).group(0)
    w = float(re.search(r' width="([\d.]+)pt"', head).group(1))
    h = float(re.search(r' height="([\d.]+)pt"', head).group(1))
    box = [float(v) for v in re.search(r'viewBox="([^"]+)"', head).group(1).split()]
    assert box[2:] == [w, h]
    return box


def test_svg_is_cropped_as_tight_and_reproducible():
    buf = io.StringIO()
    fig = _figure()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    pyplot().close(fig)
    tight = _view_box(buf.getvalue())
    once = svg(_figure())
    box = _view_box(once)
    assert box[0] < 0  # the label reaches past the figure: the box takes it in
    assert box[2:] == pytest.approx(tight[2:], abs=0.01)
    assert '<rect x="%g" y="%g"' % (box[0], box[1]) in once  # white under the whole box
    assert svg(_figure()) == once


def test_log_axis_labels_are_plain_text():
    fig, ax = pyplot().subplots()
    ax.plot([1e-3, 1e6], [1, 2e4])
    log_scale(ax, "x")
    log_scale(ax, "y")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    pyplot().close(fig)
    assert "10⁻⁴" in labels and "10⁰" in labels and "10⁶" in labels
    assert not any("$" in label for label in labels)
    assert plots._plain_power(r"$\mathdefault{2\times10^{-3}}$") == "2×10⁻³"
    assert plots._plain_power("7") == "7"


# --------------------------------------------------------------------------
# Titles placed without measuring the axes again


def _long_title_over_an_offset():
    """A y axis with an offset text ("1e9" above its top left) under a title
    wide enough to meet it: matplotlib raises the title above the offset."""
    fig, ax = pyplot().subplots(figsize=(4, 3))
    ax.plot([0, 1, 2], [1e9 + 1, 1e9 + 3, 1e9 + 2])
    ax.set_title("a title long enough to reach over the offset text at the left of the axes")
    return fig


def _twins():
    fig, ax = pyplot().subplots(figsize=(6, 3))
    ax.plot([0, 1], [0, 1])
    ax.twiny().plot([0, 5], [1, 0])  # tick labels on top: the title goes above them
    ax.set_title("twins")
    return fig


def _inset():
    fig, ax = pyplot().subplots(figsize=(6, 3))
    ax.plot([0, 1], [0, 1])
    ax.inset_axes([0.1, 0.8, 0.3, 0.4]).plot([0, 1], [1, 0])  # reaches above the axes
    ax.set_title("inset")
    return fig


def _grid():
    fig, axes = pyplot().subplots(2, 2, figsize=(6, 5))
    for i, ax in enumerate(axes.flat):
        ax.plot([0, 1], [i, 1e4 * i])
        ax.set_title(f"panel {i}", fontsize=10)
    return fig


@pytest.mark.parametrize("make", [_figure, _long_title_over_an_offset, _twins, _inset, _grid],
                         ids=["plain", "offset-text", "twin-axes", "inset", "grid"])
def test_titles_are_where_matplotlib_places_them(make, monkeypatch):
    fixed = svg(make())
    monkeypatch.setattr(plots, "_fix_titles", lambda fig: [])  # matplotlib's own placement
    assert svg(make()) == fixed


def test_titles_are_placed_without_measuring_the_axes_again():
    """The plain figure's title stays fixed at the top of its axes; a title
    matplotlib moves falls back to its placement (the figure drawn again)."""
    fig = _figure()
    (ax,) = [a for a in fig.axes if a.get_title()]
    svg(fig)
    assert ax._autotitlepos is False and ax.title.get_position()[1] == 1.0
    moved = _long_title_over_an_offset()
    svg(moved)
    assert moved.axes[0]._autotitlepos is True
    assert moved.axes[0].title.get_position()[1] > 1.0


def test_no_axis_shows_only_an_offset_and_noise_on_a_constant_is_drawn_flat():
    """A throughput of 100 % +- 0.001 % gets whole tick values and a span of a few
    percent (not "+1e2" and a zig-zag); a log axis within one decade becomes linear."""
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([64, 82, 97], [99.999, 100.001, 99.9995])
    b.plot([1, 2, 3], [1.0, 1.001, 1.002])
    b.set_yscale("log")
    plots.readable_axes(fig)
    fig.canvas.draw()
    for ax in (a, b):
        assert ax.yaxis.get_major_formatter().get_offset() == ""
        assert ax.xaxis.get_major_formatter().get_offset() == ""
    lo, hi = a.get_ylim()
    assert hi - lo >= 0.02 * 100 * 0.999
    assert b.get_yscale() == "linear"
    plt.close(fig)


def test_reproduction_figures_name_numbers_show_hidden_series_and_skip_empty_panels(monkeypatch):
    """A series identical to another is marked and said to be; a number in a legend
    carries its column's name; a panel with nothing to draw is left out."""
    import polars as pl

    from fabricsim.reproductions import page

    seen = {}

    def capture(fig):
        seen["labels"] = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
        seen["panels"] = len(fig.axes)
        pyplot().close(fig)
        return "<svg></svg>"

    monkeypatch.setattr(page, "svg", capture)
    same = pl.DataFrame({"device": ["a", "a", "b", "b"], "x": [1, 2, 1, 2], "y": [1.0, 2.0, 1.0, 2.0]})
    page.line_figure("t", same, "x", "y")
    assert seen["labels"] == ["a", "b (same values as a)"]
    ports = pl.DataFrame({"ports": [2, 2, 4, 4], "x": [1, 2, 1, 2], "y": [1.0, 2.0, None, None],
                          "size": [1, 1, 2, 2]})
    page.line_figure("p", ports, "x", "y", series=("ports",), facet="size")
    assert seen["panels"] == 1 and seen["labels"] == ["ports 2"]
