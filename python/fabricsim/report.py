"""A self-contained HTML report of one run: summary, conservation, plots and tables.

Plots are rendered with matplotlib to inline SVG, so the page has no external
files and opens offline in any browser.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import polars as pl

if TYPE_CHECKING:
    from fabricsim.results import Result

__all__ = ["render_html", "write_plot_files", "write_report"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
h1{margin-bottom:.2rem} h2{margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right} th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
.ok{color:#127a1f;font-weight:600} .bad{color:#b00020;font-weight:600} .muted{color:#666}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(220px,1fr));gap:.5rem}
.card{border:1px solid #ddd;border-radius:6px;padding:.6rem} .card b{font-size:1.3rem;display:block}
"""


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:  # NaN
            return "–"
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return html.escape(str(value))


def _table(frame: pl.DataFrame, limit: int = 50) -> str:
    if frame.height == 0:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in row) + "</tr>" for row in frame.head(limit).iter_rows()
    )
    more = f'<p class="muted">{frame.height - limit:,} more rows in the Parquet file</p>' if frame.height > limit else ""
    return f"<table><tr>{head}</tr>{rows}</table>{more}"


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    _pyplot().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _figure(name: str, svg: str) -> str:
    """An inline plot, tagged so :func:`write_plot_files` can save it as ``name.svg``."""
    return f'<figure data-plot="{html.escape(name)}">{svg}</figure>'


_FIGURE = re.compile(r'<figure data-plot="([^"]+)">(<svg.*?</svg>)\s*</figure>', re.S)


def write_plot_files(page: str, directory: str | Path) -> list[Path]:
    """Save every plot of a report page as ``directory/<name>.svg``."""
    found = _FIGURE.findall(page)
    if not found:
        return []
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, svg in found:
        path = out / f"{name}.svg"
        path.write_text('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _pyplot() -> Any:
    """``matplotlib.pyplot`` on the headless backend, with reproducible SVG ids."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "fabricsim"
    return plt


def _time_unit(max_ps: float) -> tuple[float, str]:
    """A readable unit for a time axis spanning up to ``max_ps``."""
    for scale, unit in ((1e12, "s"), (1e9, "ms"), (1e6, "us")):
        if max_ps >= 10 * scale:
            return scale, unit
    return 1e3, "ns"


def _step_plot(name: str, series: Iterable[tuple[str, Any, Any]], scale: float, unit: str, ylabel: str, title: str) -> str:
    """Step lines of ``(label, times_ps, values)`` over a time axis in ``unit``."""
    fig, ax = _pyplot().subplots(figsize=(10, 3.6))
    for label, times, values in series:
        ax.step(times / scale, values, where="post", label=label)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    return _figure(name, _svg(fig))


def _bar_plot(
    name: str, labels: list[str], values: Any, color: str, xlabel: str, title: str, xlim: tuple[float, float] | None = None
) -> str:
    """Horizontal bars, the first label on top."""
    fig, ax = _pyplot().subplots(figsize=(10, 0.3 * len(labels) + 1))
    ax.barh(labels[::-1], values[::-1], color=color)
    ax.set_xlabel(xlabel)
    if xlim is not None:
        ax.set_xlim(*xlim)
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="x")
    return _figure(name, _svg(fig))


def _throughput_plot(result: Result, top: int = 8) -> str:
    t = result.throughput
    if t.height == 0 or "time_ps" not in t.columns:
        return '<p class="muted">no throughput samples (stats.throughput_interval is 0, or nothing was delivered)</p>'
    import numpy as np

    width = 0
    if result.scenario is not None:
        width = int(result.scenario.stats.throughput_interval)
    times = np.unique(t["time_ps"].to_numpy())
    if width <= 0:
        width = int(np.diff(times).min()) if len(times) > 1 else 1
    per_host = t.group_by(["time_ps", "host"]).agg(pl.col("bytes").sum())
    busiest = (
        per_host.group_by("host").agg(pl.col("bytes").sum().alias("total"))
        .sort(["total", "host"], descending=[True, False]).head(top)
    )
    # Bins without deliveries are absent from the table: plot them as zero.
    first, last = int(times.min()) // width, int(times.max()) // width
    grid = np.arange(first, last + 2) * width
    scale, unit = _time_unit(float(grid[-1]))

    def gbps(host: Any) -> Any:
        s = per_host.filter(pl.col("host") == host)
        dense = np.zeros(len(grid))
        dense[(s["time_ps"].to_numpy() // width - first).astype(int)] = s["bytes"].to_numpy()
        return dense * 8 / (width * 1e-12) / 1e9

    return _step_plot(
        "throughput",
        ((str(host), grid, gbps(host)) for host, _ in busiest.iter_rows()),
        scale,
        unit,
        "received (Gb/s)",
        f"In-order delivered bytes per receiving host ({width / 1e9:g} ms bins), {len(busiest)} busiest",
    )


def _drops_plot(result: Result) -> str:
    d = result.drops
    if d.height == 0:
        return ""
    by = d.group_by(["node", "reason"]).agg(pl.col("packets").sum()).sort(["packets", "node"], descending=[True, False])
    by = by.head(16)
    labels = [f"{n} · {r}" for n, r in zip(by["node"].to_list(), by["reason"].to_list())]
    return _bar_plot("drops", labels, by["packets"].to_numpy(), "#c0392b", "packets dropped", "Drops by node and reason")


def _fct_plot(result: Result) -> str:
    fct = getattr(result, "fct", None)
    if fct is None or fct.height == 0 or "bucket" not in fct.columns:
        return ""
    rows = fct.filter(pl.col("bucket") != "all").filter(pl.col("count") > 0)
    if rows.height == 0:
        return ""
    fig, ax = _pyplot().subplots(figsize=(8, 3.4))
    x = list(range(rows.height))
    ax.bar([i - 0.2 for i in x], rows["mean_fct_ps"].to_numpy() / 1e6, width=0.4, label="mean")
    ax.bar([i + 0.2 for i in x], rows["p99_fct_ps"].to_numpy() / 1e6, width=0.4, label="p99")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{b}\n({c} flows)" for b, c in zip(rows["bucket"].to_list(), rows["count"].to_list())])
    ax.set_yscale("log")
    ax.set_ylabel("FCT (us)")
    ax.set_title("Flow completion time by flow size")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y", which="both")
    return _figure("fct", _svg(fig))


def _queue_plot(result: Result, top: int = 6) -> str:
    q = result.queues
    if q.height == 0:
        return '<p class="muted">no queue built up (or sampling was off)</p>'
    per_port = q.group_by(["time_ps", "node", "port"]).agg(pl.col("bytes").sum()).sort("time_ps")
    busiest = (
        per_port.group_by(["node", "port"]).agg(pl.col("bytes").max().alias("peak"))
        .sort(["peak", "node", "port"], descending=[True, False, False]).head(top)
    )
    scale, unit = _time_unit(float(per_port["time_ps"].max()))

    def port_series(node: Any, port: Any) -> tuple[str, Any, Any]:
        s = per_port.filter((pl.col("node") == node) & (pl.col("port") == port))
        return f"{node} port {port}", s["time_ps"].to_numpy(), s["bytes"].to_numpy() / 1e3

    return _step_plot(
        "queues",
        (port_series(node, port) for node, port, _ in busiest.iter_rows()),
        scale,
        unit,
        "queued (KB)",
        f"Egress queue occupancy, {len(busiest)} busiest ports",
    )


def _link_plot(result: Result, top: int = 16) -> str:
    links = result.links
    if links.height == 0:
        return ""
    busy = links.sort("utilization", descending=True, maintain_order=True).head(top)
    labels = [f"{a}→{b}" for a, b in zip(busy["src"].to_list(), busy["dst"].to_list())]
    return _bar_plot(
        "links",
        labels,
        busy["utilization"].to_numpy() * 100,
        "#3a7bd5",
        "utilization over the run (%)",
        f"Busiest {len(labels)} link directions",
        xlim=(0, 100),
    )


def _fct_section(result: Result) -> str:
    """FCT by flow-size bucket (TCP runs only); times in microseconds."""
    fct = getattr(result, "fct", None)
    if fct is None or fct.height == 0:
        return ""
    shown = fct.select(
        "bucket", "count", "incomplete",
        *[(pl.col(c) / 1e6).alias(c.replace("_ps", "_us")) for c in ("mean_fct_ps", "median_fct_ps", "p99_fct_ps")],
        "mean_slowdown", "median_slowdown", "p99_slowdown",
    )
    note = '<p class="muted">slowdown = FCT / ideal FCT on an empty network (see fabricsim.fct)</p>'
    return f"<h2>Flow completion time by size</h2>{_fct_plot(result)}{_table(shown)}{note}\n"


def _cards(items: Iterable[tuple[str, str]]) -> str:
    return '<div class="grid">' + "".join(f'<div class="card">{k}<b>{v}</b></div>' for k, v in items) + "</div>"


def render_html(result: Result, title: str | None = None) -> str:
    """The report page for ``result`` as one HTML string."""
    s = result.summary
    name = title or str(s.get("scenario", "run"))
    ok = bool(s.get("conservation_ok")) and bool(s.get("buffer_accounting_ok"))
    status = '<span class="ok">held</span>' if ok else '<span class="bad">VIOLATED</span>'
    cards = _cards(
        [
            ("simulated time", f"{s.get('sim_time_s', 0) * 1e3:,.3f} ms"),
            ("wall time", f"{s.get('wall_time_s', 0):,.2f} s"),
            ("events/s", f"{s.get('events_per_sec', 0) / 1e6:,.1f} M"),
            ("packets delivered", _fmt(s.get("packets_delivered"))),
            ("packets dropped", _fmt(s.get("packets_dropped"))),
            ("flows completed", f"{_fmt(s.get('flows_completed'))} / {_fmt(s.get('flows_total'))}"),
        ]
    )
    flows = result.flows
    flow_cols: Sequence[str] = [
        c for c in ("name", "kind", "src", "dst", "class", "packets_sent", "packets_delivered", "packets_dropped",
                    "completed", "fct_ps", "latency_mean_ps", "latency_max_ps") if c in flows.columns
    ]
    summary_rows = pl.DataFrame({"metric": list(s.keys()), "value": [_fmt(v) for v in s.values()]})
    description = ""
    if result.scenario is not None and getattr(result.scenario, "description", None):
        description = f"<p>{html.escape(result.scenario.description)}</p>"
    body = f"""
<h1>{html.escape(name)}</h1>{description}
<p>seed {_fmt(s.get('seed'))} · conservation (created = delivered + dropped + in network;
buffer accounting matches queues): {status}</p>
{cards}
<h2>Queues</h2>{_queue_plot(result)}
<h2>Throughput</h2>{_throughput_plot(result)}
<h2>Links</h2>{_link_plot(result)}
<h2>Drops</h2>{_drops_plot(result)}{_table(result.drops)}
{_fct_section(result)}<h2>Flows</h2>{_table(flows.select(flow_cols))}
<h2>Summary</h2>{_table(summary_rows, limit=200)}
"""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(name)} · fabricsim</title>'
        f"<style>{_CSS}</style></head><body>{body}</body></html>\n"
    )


def write_report(result: Result, path: str | Path) -> Path:
    """Write the report page to ``path``, its plots as SVG files to ``plots/``
    beside it, and return the page's path."""
    p = Path(path)
    page = render_html(result)
    p.write_text(page, encoding="utf-8")
    write_plot_files(page, p.parent / "plots")
    return p
