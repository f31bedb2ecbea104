"""The report of one run: summary cards, conservation, plots and tables, one section after another.

Below the heading, a section is a function of the run returning its HTML
(``""`` to leave it out); :data:`SECTIONS` lists them in page order. A new plot or table goes in
a section function here, added to :data:`SECTIONS`; tables the core adds are
in ``result.tables()`` by name.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import polars as pl

from fabricsim.outputs.report.html import cards, figure, fmt, html_page, html_table, write_plot_files
from fabricsim.outputs.report.plots import bar_plot, pyplot, step_plot, svg, time_unit
from fabricsim.outputs.tables import RunTables

__all__ = ["SECTIONS", "render_html", "write_report"]


def _throughput_plot(result: RunTables, top: int = 8) -> str:
    t = result.throughput
    if t.height == 0 or "time_ps" not in t.columns:
        return '<p class="muted">no throughput samples (stats.throughput_interval is 0, or nothing was delivered)</p>'
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
    scale, unit = time_unit(float(grid[-1]))

    def gbps(host: Any) -> Any:
        s = per_host.filter(pl.col("host") == host)
        dense = np.zeros(len(grid))
        dense[(s["time_ps"].to_numpy() // width - first).astype(int)] = s["bytes"].to_numpy()
        return dense * 8 / (width * 1e-12) / 1e9

    return step_plot(
        "throughput",
        ((str(host), grid, gbps(host)) for host, _ in busiest.iter_rows()),
        scale,
        unit,
        "received (Gb/s)",
        f"In-order delivered bytes per receiving host ({width / 1e9:g} ms bins), {len(busiest)} busiest",
    )


def _drops_plot(result: RunTables) -> str:
    d = result.drops
    if d.height == 0:
        return ""
    by = d.group_by(["node", "reason"]).agg(pl.col("packets").sum()).sort(["packets", "node"], descending=[True, False])
    by = by.head(16)
    labels = [f"{n} · {r}" for n, r in zip(by["node"].to_list(), by["reason"].to_list())]
    return bar_plot("drops", labels, by["packets"].to_numpy(), "#c0392b", "packets dropped", "Drops by node and reason")


def _fct_plot(result: RunTables) -> str:
    fct = result.fct
    if fct.height == 0 or "bucket" not in fct.columns:
        return ""
    rows = fct.filter(pl.col("bucket") != "all").filter(pl.col("count") > 0)
    if rows.height == 0:
        return ""
    fig, ax = pyplot().subplots(figsize=(8, 3.4))
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
    return figure("fct", svg(fig))


def _queue_plot(result: RunTables, top: int = 6) -> str:
    q = result.queues
    if q.height == 0:
        return '<p class="muted">no queue built up (or sampling was off)</p>'
    per_port = q.group_by(["time_ps", "node", "port"]).agg(pl.col("bytes").sum()).sort("time_ps")
    busiest = (
        per_port.group_by(["node", "port"]).agg(pl.col("bytes").max().alias("peak"))
        .sort(["peak", "node", "port"], descending=[True, False, False]).head(top)
    )
    scale, unit = time_unit(float(per_port["time_ps"].max()))

    def port_series(node: Any, port: Any) -> tuple[str, Any, Any]:
        s = per_port.filter((pl.col("node") == node) & (pl.col("port") == port))
        return f"{node} port {port}", s["time_ps"].to_numpy(), s["bytes"].to_numpy() / 1e3

    return step_plot(
        "queues",
        (port_series(node, port) for node, port, _ in busiest.iter_rows()),
        scale,
        unit,
        "queued (KB)",
        f"Egress queue occupancy, {len(busiest)} busiest ports",
    )


def _link_plot(result: RunTables, top: int = 16) -> str:
    links = result.links
    if links.height == 0:
        return ""
    busy = links.sort("utilization", descending=True, maintain_order=True).head(top)
    labels = [f"{a}→{b}" for a, b in zip(busy["src"].to_list(), busy["dst"].to_list())]
    return bar_plot(
        "links",
        labels,
        busy["utilization"].to_numpy() * 100,
        "#3a7bd5",
        "utilization over the run (%)",
        f"Busiest {len(labels)} link directions",
        xlim=(0, 100),
    )


# --------------------------------------------------------------------------
# Sections, in page order


def _heading(result: RunTables, title: str) -> str:
    """Title, description, seed, whether the invariants held, headline figures."""
    s = result.summary
    ok = bool(s.get("conservation_ok")) and bool(s.get("buffer_accounting_ok"))
    status = '<span class="ok">held</span>' if ok else '<span class="bad">VIOLATED</span>'
    headline = cards(
        [
            ("simulated time", f"{s.get('sim_time_s', 0) * 1e3:,.3f} ms"),
            ("wall time", f"{s.get('wall_time_s', 0):,.2f} s"),
            ("events/s", f"{s.get('events_per_sec', 0) / 1e6:,.1f} M"),
            ("packets delivered", fmt(s.get("packets_delivered"))),
            ("packets dropped", fmt(s.get("packets_dropped"))),
            ("flows completed", f"{fmt(s.get('flows_completed'))} / {fmt(s.get('flows_total'))}"),
        ]
    )
    description = ""
    if result.scenario is not None and getattr(result.scenario, "description", None):
        description = f"<p>{html.escape(result.scenario.description)}</p>"
    return f"""<h1>{html.escape(title)}</h1>{description}
<p>seed {fmt(s.get('seed'))} · conservation (created = delivered + dropped + in network;
buffer accounting matches queues): {status}</p>
{headline}
"""


def _queues(result: RunTables) -> str:
    return f"<h2>Queues</h2>{_queue_plot(result)}\n"


def _throughput(result: RunTables) -> str:
    return f"<h2>Throughput</h2>{_throughput_plot(result)}\n"


def _links(result: RunTables) -> str:
    return f"<h2>Links</h2>{_link_plot(result)}\n"


def _drops(result: RunTables) -> str:
    return f"<h2>Drops</h2>{_drops_plot(result)}{html_table(result.drops)}\n"


def _fct(result: RunTables) -> str:
    """FCT by flow-size bucket (TCP runs only); times in microseconds."""
    fct = result.fct
    if fct.height == 0:
        return ""
    shown = fct.select(
        "bucket", "count", "incomplete",
        *[(pl.col(c) / 1e6).alias(c.replace("_ps", "_us")) for c in ("mean_fct_ps", "median_fct_ps", "p99_fct_ps")],
        "mean_slowdown", "median_slowdown", "p99_slowdown",
    )
    note = '<p class="muted">slowdown = FCT / ideal FCT on an empty network (see fabricsim.fct)</p>'
    return f"<h2>Flow completion time by size</h2>{_fct_plot(result)}{html_table(shown)}{note}\n"


def _flows(result: RunTables) -> str:
    flows = result.flows
    columns: Sequence[str] = [
        c for c in ("name", "kind", "src", "dst", "class", "packets_sent", "packets_delivered", "packets_dropped",
                    "completed", "fct_ps", "latency_mean_ps", "latency_max_ps") if c in flows.columns
    ]
    return f"<h2>Flows</h2>{html_table(flows.select(columns))}\n"


def _summary(result: RunTables) -> str:
    s = result.summary
    rows = pl.DataFrame({"metric": list(s.keys()), "value": [fmt(v) for v in s.values()]})
    return f"<h2>Summary</h2>{html_table(rows, limit=200)}\n"


SECTIONS: tuple[Callable[[RunTables], str], ...] = (
    _queues,
    _throughput,
    _links,
    _drops,
    _fct,
    _flows,
    _summary,
)
"""The sections below the heading, top to bottom."""


def render_html(result: RunTables, title: Optional[str] = None) -> str:
    """The report page for ``result`` as one HTML string."""
    name = title or str(result.summary.get("scenario", "run"))
    body = "\n" + _heading(result, name) + "".join(section(result) for section in SECTIONS)
    return html_page(name, body)


def write_report(result: RunTables, path: str | Path) -> Path:
    """Write the report page to ``path``, its plots as SVG files to ``plots/``
    beside it, and return the page's path."""
    p = Path(path)
    page_text = render_html(result)
    p.write_text(page_text, encoding="utf-8")
    write_plot_files(page_text, p.parent / "plots")
    return p
