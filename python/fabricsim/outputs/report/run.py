"""The report of one run, one section after another.

**Adding a section.** A section is a function ``(result: RunTables) -> str``
returning its HTML (``""`` leaves it out); :data:`SECTIONS` lists them in
page order. Use :func:`~fabricsim.outputs.report.html.section` for the
heading, :func:`~fabricsim.outputs.report.html.human_table` for tables in
readable units and :func:`~fabricsim.outputs.report.plots.step_plot` (or
``pyplot()`` + ``figure(name, svg(fig))``) for plots; every plot name must be
unique on the page (it is also saved as ``plots/<name>.svg``). Name ports with
:func:`port_labels` ("leaf0 -> spine1") and show times, sizes and rates with
``fmt_time``/``fmt_bytes``/``fmt_rate`` (the Parquet files keep the exact
integers). Tables the core adds are in ``result.tables()`` by name. Then list
the function in :data:`SECTIONS` here, or, from another module, call
:func:`register_section` (it goes before the collapsed counters, or before a
section you name).

The page starts with the heading (title, warnings, what was simulated, the
headline figures) and "what matters in this run"; the full summary counters
come last, collapsed.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import polars as pl

from fabricsim.outputs.report.html import (
    Col,
    banner,
    cards,
    details,
    figure,
    fmt,
    fmt_bytes,
    fmt_count,
    fmt_pct,
    fmt_rate,
    fmt_time,
    html_page,
    html_table,
    human_table,
    section,
    write_plot_files,
)
from fabricsim.outputs.report.plots import bar_plot, cdf_points, log_scale, pyplot, step_plot, svg, time_unit
from fabricsim.outputs.latency import class_latency
from fabricsim.outputs.tables import RunTables

__all__ = ["SECTIONS", "class_latency", "port_labels", "register_section", "render_html", "write_report"]

Section = Callable[[RunTables], str]

# --------------------------------------------------------------------------
# Shared helpers


def port_labels(result: RunTables) -> dict[tuple[str, int], str]:
    """``(node, local port) -> "node -> peer"`` from the run's links table."""
    links = result.links
    if links.height == 0 or "src_port" not in links.columns:
        return {}
    # Several sections ask, and a fabric has many ports.
    return result.memo("_port_labels", (links,), lambda: {
        (a, int(p)): f"{a} -> {b}"
        for a, p, b in zip(links["src"].to_list(), links["src_port"].to_list(), links["dst"].to_list())
    })


def _port(labels: dict[tuple[str, int], str], node: Any, port: Any) -> str:
    if port is None:
        return str(node)
    return labels.get((node, int(port)), f"{node} port {port}")


def _has(frame: pl.DataFrame, *columns: str) -> bool:
    return frame.height > 0 and all(c in frame.columns for c in columns)


def _with_where(frame: pl.DataFrame, labels: dict[tuple[str, int], str]) -> pl.DataFrame:
    """``frame`` with a ``where`` column naming its (node, port) as "node -> peer"."""
    if "port" not in frame.columns:
        return frame.with_columns(pl.col("node").cast(pl.String).alias("where"))
    names = [_port(labels, n, p) for n, p in frame.select("node", "port").iter_rows()]
    return frame.with_columns(pl.Series("where", names, dtype=pl.String))


def _interval(result: RunTables) -> int:
    return int(result.scenario.stats.throughput_interval) if result.scenario is not None else 0


def _table(result: RunTables, name: str) -> pl.DataFrame:
    return result.tables().get(name, pl.DataFrame())


def _gbps_series(
    frame: pl.DataFrame, key: str, value: str, width: int, grid: np.ndarray, first: int
) -> Callable[[Any], np.ndarray]:
    """Dense Gb/s per bin of one ``key`` value (absent bins are zero)."""

    def series(k: Any) -> np.ndarray:
        s = frame.filter(pl.col(key) == k)
        dense = np.zeros(len(grid))
        idx = (s["time_ps"].to_numpy() // width - first).astype(int)
        np.add.at(dense, idx, s[value].to_numpy().astype(np.float64))
        return dense * 8 / (width * 1e-12) / 1e9

    return series


# --------------------------------------------------------------------------
# Plots


_MAX_PLOT_BINS = 2000


def _throughput_plot(result: RunTables, top: int = 8) -> str:
    t = result.throughput
    if t.height == 0 or "time_ps" not in t.columns:
        return '<p class="muted">no throughput samples (stats.throughput_interval is 0, or nothing was delivered)</p>'
    width = _interval(result)
    times = np.unique(t["time_ps"].to_numpy())
    if width <= 0:
        width = int(np.diff(times).min()) if len(times) > 1 else 1
    # At most _MAX_PLOT_BINS bins across the plot: finer bins are summed into
    # wider ones (the table itself is sparse, the plot is dense).
    span = int(times.max()) - int(times.min()) + width
    width *= max(1, -(-span // (width * _MAX_PLOT_BINS)))
    per_host = (
        t.with_columns((pl.col("time_ps") // width * width).alias("time_ps"))
        .group_by(["time_ps", "host"]).agg(pl.col("bytes").sum())
    )
    busiest = (
        per_host.group_by("host").agg(pl.col("bytes").sum().alias("total"))
        .sort(["total", "host"], descending=[True, False]).head(top)
    )
    first, last = int(times.min()) // width, int(times.max()) // width
    grid = np.arange(first, last + 2) * width
    scale, unit = time_unit(float(grid[-1]))
    gbps = _gbps_series(per_host, "host", "bytes", width, grid, first)
    return step_plot(
        "throughput",
        ((str(host), grid, gbps(host)) for host, _ in busiest.iter_rows()),
        scale,
        unit,
        "received (Gb/s)",
        f"Application goodput per receiving host ({fmt_time(width)} bins), {len(busiest)} busiest",
    )


def _carried_plot(result: RunTables, top: int = 6) -> str:
    c = _table(result, "carried_links")
    width = _interval(result)
    if c.height == 0 or width <= 0:
        return ""
    c = c.with_columns((pl.col("src") + " -> " + pl.col("dst")).alias("link"))
    # At most _MAX_PLOT_BINS bins across the plot, as for throughput.
    span = int(c["time_ps"].max()) - int(c["time_ps"].min()) + width
    width *= max(1, -(-span // (width * _MAX_PLOT_BINS)))
    c = (
        c.with_columns((pl.col("time_ps") // width * width).alias("time_ps"))
        .group_by(["time_ps", "link"]).agg(pl.col("busy_ps").sum())
    )
    busiest = (
        c.group_by("link").agg(pl.col("busy_ps").sum().alias("busy"))
        .sort(["busy", "link"], descending=[True, False]).head(top)
    )
    first, last = int(c["time_ps"].min()) // width, int(c["time_ps"].max()) // width
    grid = np.arange(first, last + 2) * width
    scale, unit = time_unit(float(grid[-1]))

    def util(link: str) -> np.ndarray:
        s = c.filter(pl.col("link") == link)
        dense = np.zeros(len(grid))
        dense[(s["time_ps"].to_numpy() // width - first).astype(int)] = s["busy_ps"].to_numpy()
        return dense / width * 100

    return step_plot(
        "carried",
        ((link, grid, util(link)) for link, _ in busiest.iter_rows()),
        scale,
        unit,
        "utilization (%)",
        f"Carried on the wire: link utilization ({fmt_time(width)} bins), {len(busiest)} busiest link directions",
    )


def _largest_flows_plot(result: RunTables, top: int = 6) -> str:
    flows = result.flows
    c = _table(result, "carried_flows")
    width = _interval(result)
    if c.height == 0 or width <= 0 or flows.height == 0:
        return ""
    size = "size_bytes" if "size_bytes" in flows.columns else "bytes_sent"
    largest = (
        flows.with_columns(pl.col(size).fill_null(pl.col("bytes_sent")).alias("_size"))
        .sort(["_size", "flow_id"], descending=[True, False]).head(top)
    )
    # At most _MAX_PLOT_BINS bins across the plot, as for throughput.
    span = int(c["time_ps"].max()) - int(c["time_ps"].min()) + width
    width *= max(1, -(-span // (width * _MAX_PLOT_BINS)))
    c = (
        c.with_columns((pl.col("time_ps") // width * width).alias("time_ps"))
        .group_by(["time_ps", "flow_id"]).agg(pl.col("bytes").sum())
    )
    first, last = int(c["time_ps"].min()) // width, int(c["time_ps"].max()) // width
    grid = np.arange(first, last + 2) * width
    scale, unit = time_unit(float(grid[-1]))
    gbps = _gbps_series(c, "flow_id", "bytes", width, grid, first)
    series = [
        (f"{name} #{fid} {src}->{dst} ({fmt_bytes(sz)})", grid, gbps(fid))
        for fid, name, src, dst, sz in largest.select("flow_id", "name", "src", "dst", "_size").iter_rows()
    ]
    return step_plot(
        "largest-flows",
        series,
        scale,
        unit,
        "carried (Gb/s)",
        f"The {len(series)} largest flows: frames reaching the receiver ({fmt_time(width)} bins)",
    )


def _drops_plot(result: RunTables, labels: dict[tuple[str, int], str]) -> str:
    d = result.drops
    if not _has(d, "node", "reason", "packets"):
        return ""
    d = _with_where(d, labels)
    by = (
        d.group_by(["where", "reason"]).agg(pl.col("packets").sum())
        .sort(["packets", "where"], descending=[True, False]).head(16)
    )
    names = [f"{w} · {r}" for w, r in by.select("where", "reason").iter_rows()]
    return bar_plot("drops", names, by["packets"].to_numpy(), "#c0392b", "packets dropped", "Drops by port and reason")


def _queue_plot(result: RunTables, labels: dict[tuple[str, int], str], top: int = 6) -> str:
    q = result.queues
    if not _has(q, "time_ps", "node", "port", "bytes"):
        return '<p class="muted">no queue built up (or sampling was off)</p>'
    keys = ["time_ps", "node", "port"]
    if q.select(pl.struct(keys).is_duplicated().any()).item():  # several classes queued at a port: their sum
        per_port = q.group_by(keys).agg(pl.col("bytes").sum())
    else:  # one row per port and time already (a third of the grouping's cost to find out)
        per_port = q.select(*keys, "bytes")
    busiest = (
        per_port.group_by(["node", "port"]).agg(pl.col("bytes").max().alias("peak"))
        .sort(["peak", "node", "port"], descending=[True, False, False]).head(top)
    )
    scale, unit = time_unit(float(per_port["time_ps"].max()))

    def port_series(node: Any, port: Any) -> tuple[str, Any, Any]:
        s = per_port.filter((pl.col("node") == node) & (pl.col("port") == port)).sort("time_ps")
        return _port(labels, node, port), s["time_ps"].to_numpy(), s["bytes"].to_numpy() / 1e3

    return step_plot(
        "queues",
        (port_series(node, port) for node, port, _ in busiest.iter_rows()),
        scale,
        unit,
        "queued (KB)",
        f"Egress queue occupancy, {len(busiest)} busiest ports",
    )


def _power_plot(result: RunTables) -> str:
    power = result.power
    if power.height == 0:
        return ""
    end = float(power["end_ps"].max())
    scale, unit = time_unit(end)

    def device(node: Any) -> tuple[str, Any, Any]:
        rows = power.filter(pl.col("node") == node).sort("time_ps")
        # A step per bin, held to the bin's end.
        times = np.append(rows["time_ps"].to_numpy(), rows["end_ps"].to_numpy()[-1])
        watts = np.append(rows["watts"].to_numpy(), rows["watts"].to_numpy()[-1])
        return str(node), times, watts

    nodes = power["node"].unique(maintain_order=True).to_list()
    return step_plot("power", (device(n) for n in nodes), scale, unit, "power (W)", "Device power per time bin")


def _link_plot(result: RunTables, top: int = 16) -> str:
    links = result.links
    if not _has(links, "src", "dst", "utilization"):
        return ""
    busy = links.sort("utilization", descending=True, maintain_order=True).head(top)
    names = [f"{a} -> {b}" for a, b in zip(busy["src"].to_list(), busy["dst"].to_list())]
    return bar_plot(
        "links",
        names,
        busy["utilization"].to_numpy() * 100,
        "#3a7bd5",
        "utilization over the whole run (%)",
        f"Busiest {len(names)} link directions",
        xlim=(0, 100),
    )


def _fct_plot(rows: pl.DataFrame) -> str:
    rows = rows.filter(pl.col("bucket") != "all").filter(pl.col("count") > 0)
    if rows.height == 0:
        return ""
    fig, ax = pyplot().subplots(figsize=(8, 3.4))
    x = list(range(rows.height))
    ax.bar([i - 0.2 for i in x], rows["mean_fct_ps"].to_numpy() / 1e6, width=0.4, label="mean")
    ax.bar([i + 0.2 for i in x], rows["p99_fct_ps"].to_numpy() / 1e6, width=0.4, label="p99")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{b}\n({c} flows)" for b, c in zip(rows["bucket"].to_list(), rows["count"].to_list())])
    log_scale(ax, "y")
    ax.set_ylabel("FCT (us)")
    ax.set_title("Flow completion time by flow size, all traffic")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y", which="both")
    return figure("fct", svg(fig))


def _fct_cdf_plot(per_flow: pl.DataFrame) -> str:
    done = per_flow.filter(pl.col("counted") & pl.col("completed") & pl.col("fct_ps").is_not_null())
    if done.height == 0:
        return ""
    fig, ax = pyplot().subplots(figsize=(8, 3.6))
    groups = [("all traffic", done)]
    names = list(dict.fromkeys(done["name"].to_list()))
    if len(names) > 1:
        groups += [(name, done.filter(pl.col("name") == name)) for name in names]
    for label, part in groups:
        # The points the plot can show, the median and p99 of the FCT tables among them.
        values, fraction = cdf_points(part["fct_ps"].to_numpy())
        ax.step(values / 1e6, fraction, where="post", label=f"{label} ({part.height})")
    log_scale(ax, "x")
    ax.set_xlabel("FCT (us)")
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1.01)
    ax.set_title("FCT distribution (CDF)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3, which="both")
    return figure("fct-cdf", svg(fig))


_VECTOR_POINTS = 5000  # scatter plots with more points are rasterized


def _slowdown_plot(per_flow: pl.DataFrame) -> str:
    done = per_flow.filter(pl.col("counted") & pl.col("slowdown").is_not_null())
    if done.height == 0:
        return ""
    sizes = done["size_bytes"].to_numpy().astype(np.float64)
    slow = done["slowdown"].to_numpy()
    fig, ax = pyplot().subplots(figsize=(8, 3.6))
    # Beyond a few thousand flows the points are drawn as one embedded image
    # (vector markers would make a report of megabytes that takes seconds to draw).
    ax.scatter(sizes, slow, s=4, alpha=0.3, color="#888", label="flows", rasterized=sizes.size > _VECTOR_POINTS)
    edges = np.logspace(np.log10(max(sizes.min(), 1)), np.log10(sizes.max() * 1.0001), 13)
    centers, med, p99 = [], [], []
    for a, b in zip(edges, edges[1:]):
        sel = slow[(sizes >= a) & (sizes < b)]
        if sel.size:
            centers.append(np.sqrt(a * b))
            med.append(float(np.median(sel)))
            p99.append(float(np.quantile(sel, 0.99, method="higher")))
    ax.plot(centers, med, marker="o", label="median")
    ax.plot(centers, p99, marker="s", label="p99")
    log_scale(ax, "x")
    log_scale(ax, "y")
    ax.set_xlabel("flow size (bytes)")
    ax.set_ylabel("slowdown (FCT / ideal)")
    ax.set_title("Slowdown by flow size")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return figure("slowdown", svg(fig))


def _stage_plot(result: RunTables, top: int = 16) -> str:
    """Packets each pipeline stage ran on, and those it dropped."""
    p = result.pipeline
    wide = (
        p.filter(pl.col("counter").is_in(["packets", "drops"]))
        .pivot(on="counter", index=["node", "stage", "name"], values="value")
        .sort(["node", "stage"])
        .head(top)
    )
    if wide.height == 0:
        return ""
    labels = [f"{n} · {s} {name}" for n, s, name in zip(wide["node"], wide["stage"], wide["name"])]
    fig, ax = pyplot().subplots(figsize=(10, 0.35 * len(labels) + 1))
    y = np.arange(len(labels))[::-1]
    ax.barh(y + 0.2, wide["packets"].to_numpy(), height=0.4, color="#3a7bd5", label="packets")
    drops = wide["drops"].to_numpy() if "drops" in wide.columns else np.zeros(len(labels))
    ax.barh(y - 0.2, drops, height=0.4, color="#c0392b", label="dropped")
    ax.set_yticks(y, labels)
    ax.set_xlabel("packets")
    ax.set_title("Pipeline stages: packets run and dropped")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="x")
    return figure("pipeline_stages", svg(fig))


def _pipe_queue_plot(result: RunTables, top: int = 6) -> str:
    q = result.pipeline_queues
    if q.height == 0:
        return ""
    busiest = (
        q.group_by(["node", "pipe"]).agg(pl.col("packets").max().alias("peak"))
        .sort(["peak", "node", "pipe"], descending=[True, False, False]).head(top)
    )
    scale, unit = time_unit(float(q["time_ps"].max()))

    def series(node: Any, pipe: Any) -> tuple[str, Any, Any]:
        s = q.filter((pl.col("node") == node) & (pl.col("pipe") == pipe)).sort("time_ps")
        return f"{node} pipe {pipe}", s["time_ps"].to_numpy(), s["packets"].to_numpy()

    return step_plot(
        "pipeline_queues",
        (series(node, pipe) for node, pipe, _ in busiest.iter_rows()),
        scale,
        unit,
        "waiting (packets)",
        f"Packets waiting for a pipe, {len(busiest)} busiest pipes",
    )


def _share_plot(shares: pl.DataFrame, top: int = 32) -> str:
    """Each source's share of the receiver with the most sources."""
    dst = shares.sort(["sources", "dst"], descending=[True, False])["dst"][0]
    rows = shares.filter(pl.col("dst") == dst).sort("src").head(top)
    return bar_plot(
        "shares",
        [str(x) for x in rows["src"].to_list()],
        rows["share"].to_numpy() * 100,
        "#27ae60",
        f"share of bytes received by {dst} (%)",
        f"Per-source share at {dst} ({rows.height} sources, Jain's index {rows['jain'][0]:.3f})",
    )


# --------------------------------------------------------------------------
# The heading


def _link_text(link: Any) -> str:
    text = f"{fmt_rate(link.rate)}, {fmt_time(link.delay)}"
    return text + (f", {fmt_pct(link.loss)} loss" if getattr(link, "loss", 0) else "")


def _topology_text(topology: Any) -> str:
    kind = topology.kind
    if kind == "star":
        return f"star: {topology.hosts} hosts on one switch (sw0); links {_link_text(topology.link)}"
    if kind == "dumbbell":
        return (f"dumbbell: {topology.left} + {topology.right} hosts; edge links {_link_text(topology.edge_link)}, "
                f"bottleneck {_link_text(topology.bottleneck_link)}")
    if kind == "leaf_spine":
        hosts = topology.hosts_per_leaf
        hosts_text = "+".join(map(str, hosts)) if isinstance(hosts, list) else f"{hosts} per leaf"
        return (f"leaf-spine: {topology.leaves} leaves, {topology.spines} spines "
                f"({topology.links_per_spine} link(s) per leaf-spine pair), hosts {hosts_text}; "
                f"host links {_link_text(topology.host_link)}, fabric links {_link_text(topology.fabric_link)}")
    if kind == "fat_tree":
        return f"fat-tree k={topology.k}: {topology.k ** 3 // 4} hosts; links {_link_text(topology.link)}"
    if kind == "rail":
        spines = (f", {topology.spines} spines, fabric links {_link_text(topology.fabric_link)}"
                  if topology.spines else ", rails not joined")
        return (f"rail-optimised: {topology.servers} servers x {topology.gpus_per_server} GPU NICs on "
                f"{topology.gpus_per_server} rail leaves; NIC links {_link_text(topology.nic_link)}{spines}")
    hosts = sum(1 for n in topology.nodes if n.kind == "host")
    rates = sorted({link.rate for link in topology.links})
    return (f"explicit: {hosts} hosts, {len(topology.nodes) - hosts} switches, {len(topology.links)} links "
            f"({', '.join(fmt_rate(r) for r in rates)})")


def _buffer_text(buffer: Any) -> str:
    m = buffer.model
    if m == "static":
        q = f", queue limit {fmt_bytes(buffer.queue_size)}" if buffer.queue_size else ""
        return f"static, {fmt_bytes(buffer.port_size)} per port{q}"
    if m == "voq":
        kind, value = buffer.voq_limit or ("size", 0)
        limit = fmt_time(value) if kind == "time" else fmt_bytes(value)
        return f"deep-buffer VOQ, {fmt_bytes(buffer.size)}, {limit} per VOQ"
    alpha = ", ".join(f"{a:g}" for a in buffer.alpha)
    text = f"{m} (dynamic thresholds), {fmt_bytes(buffer.size)} in {fmt_bytes(buffer.cell)} cells, alpha {alpha}"
    if m == "intelligent" and buffer.port_max:
        text += f", at most {fmt_bytes(buffer.port_max)} per port, AFD + elephant trap" + (" + DPP" if buffer.dpp else "")
    return text


def _switch_text(switch: Any) -> str:
    parts = []
    if getattr(switch, "kind", "switch") == "broadcast":
        parts.append("broadcast fabric")
    if switch.device:
        parts.append(f"device {switch.device}")
    parts.append(_buffer_text(switch.buffer))
    parts.append(f"{fmt_time(switch.latency)} latency, {switch.forwarding.replace('_', '-')}")
    if switch.ecn is not None:
        parts.append(f"ECN/RED ({switch.ecn.mode})")
    if switch.pfc is not None:
        parts.append(f"PFC on class(es) {', '.join(map(str, switch.pfc.classes))}")
    pipeline = getattr(switch, "pipeline", None)
    if pipeline is not None:
        stages = f", {len(pipeline.stages)} stage(s)" if pipeline.stages else ""
        parts.append(f"{pipeline.pipes} pipeline pipe(s) of {pipeline.rate / 1e6:,.0f} Mpps{stages}")
    return "; ".join(parts)


def _traffic_text(entry: Any, scenario: Any) -> str:
    kind = entry.kind
    cls = f", class {entry.class_}" if getattr(entry, "class_", 0) else ""
    if kind in ("udp_cbr", "udp_poisson"):
        rate = str(entry.rate) if entry.rate.bps is None else fmt_rate(entry.rate.bps)
        return f"{kind}: {', '.join(entry.src)} -> {entry.dst} at {rate} each, {entry.frame_size} B frames{cls}"
    if kind == "burst":
        return f"burst: {', '.join(entry.src)} -> {entry.dst}, {entry.frames:,} x {entry.frame_size} B frames each{cls}"
    if kind == "tcp_bulk":
        what = fmt_bytes(entry.size) if entry.size else f"for {fmt_time(entry.duration)}"
        return f"tcp_bulk: {', '.join(entry.src)} -> {entry.dst}, {entry.streams} stream(s) of {what}{cls}"
    if kind == "tcp_incast":
        return (f"tcp_incast: {len(entry.servers)} server(s) x {entry.flows_per_server} flow(s) of "
                f"{fmt_bytes(entry.response_size)} -> {entry.client}, {entry.rounds} round(s){cls}")
    if kind == "tcp_flows":
        listed = f"the flows of {entry.flows_file}" if entry.flows_file else f"{len(entry.flows)} explicit flows"
        return f"tcp_flows: {listed}{cls}"
    if kind == "workload":
        load = entry.load if entry.load is not None else scenario.load
        load = (load or 0) * entry.load_scale
        basis = entry.load_basis or scenario.load_basis
        return (f"workload {entry.cdf} ({entry.pattern}): Poisson arrivals at {fmt_pct(load)} load "
                f"({basis} bytes){cls}")
    if kind == "rdma_write":
        return (f"rdma_write: {', '.join(entry.src)} -> {entry.dst}, {entry.qps} QP(s) x {entry.messages} "
                f"message(s) of {fmt_bytes(entry.message_size)}, class {entry.class_}")
    if kind == "rdma_flows":
        return f"rdma_flows: {len(entry.flows)} explicit RDMA transfers, class {entry.class_}"
    return kind


def _simulated(result: RunTables) -> str:
    """What was simulated: topology, rates, devices, traffic, duration."""
    sc = result.scenario
    if sc is None:
        return ""
    items = [("Topology", _topology_text(sc.topology)), ("Switches", _switch_text(sc.network.switch))]
    for name, spec in sc.network.switch_overrides.items():
        items.append((name, _switch_text(spec)))
    b = result.buffers
    if _has(b, "node", "reserved_cells", "cell_bytes", "capacity_cells"):
        reserved = b.filter(pl.col("reserved_cells") > 0)
        if reserved.height:
            texts = sorted({
                f"{fmt_count(r)} of {fmt_count(c)} cells ({fmt_bytes(r * cell)})"
                for r, c, cell in reserved.select("reserved_cells", "capacity_cells", "cell_bytes").iter_rows()
            })
            items.append(("Buffer set aside", "; ".join(texts) + " per switch (minimums, headroom, fixed), not shared"))
    items.append(("Hosts", f"NIC buffer {fmt_bytes(sc.network.host.nic_buffer)}, latency {fmt_time(sc.network.host.latency)}"))
    if any(e.kind in ("tcp_bulk", "tcp_incast", "tcp_flows", "workload") for e in sc.traffic):
        tcp = sc.tcp
        items.append(("TCP", f"{tcp.cc}, MTU {tcp.mtu} B, min RTO {fmt_time(tcp.min_rto)}, "
                             f"initial window {tcp.init_cwnd} segments"))
    for entry in sc.traffic:
        items.append((f"Traffic {entry.name}", _traffic_text(entry, sc)))
    drain = f", then drain (at most {fmt_time(sc.drain_limit)})" if sc.drain else ", no drain"
    items.append(("Run", f"{fmt_time(sc.duration)} of traffic{drain}; seed {sc.seed}"))
    body = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in items)
    return f'<h2>What was simulated</h2><dl class="sim">{body}{_captures(result)}</dl>'


def _captures(result: RunTables) -> str:
    """The packet-capture files of the run (``stats.pcap``), linked, with their frame counts."""
    sc = result.scenario
    taps = _table(result, "capture_taps")
    if sc is None or not sc.stats.pcap or not _has(taps, "tap", "captured", "missed"):
        return ""
    counts = {int(t): (int(c), int(m)) for t, c, m in taps.select("tap", "captured", "missed").iter_rows()}
    links = []
    for i, tap in enumerate(sc.stats.pcap):
        name = f"pcap/{tap.file_stem()}.{tap.format}"
        captured, missed = counts.get(i, (0, 0))
        where = f"{tap.node}" + (f" port {tap.port}" if tap.port is not None else ", every port")
        text = f"{where}, {tap.direction}: {fmt_count(captured)} frames"
        if missed:
            text += f" ({fmt_count(missed)} more not kept: max_packets)"
        links.append(f'<a href="{html.escape(name)}">{html.escape(name)}</a> ({html.escape(text)})')
    return f"<dt>Packet captures</dt><dd>{'; '.join(links)}</dd>"


def _heading(result: RunTables, title: str) -> str:
    """Title, description, warnings, what was simulated, headline figures."""
    s = result.summary
    ok = bool(s.get("conservation_ok")) and bool(s.get("buffer_accounting_ok"))
    status = '<span class="ok">held</span>' if ok else '<span class="bad">VIOLATED</span>'
    total = s.get("flows_total") or 0
    # The summary's words: flows_completed counts every flow that ended, lossy ones included.
    completed = s.get("flows_completed") or 0
    flows_text = f"{fmt_count(completed)} of {fmt_count(total)} completed"
    if s.get("flows_lossy"):
        flows_text += f" ({fmt_count(s['flows_lossy'])} of them lossy)"
    if s.get("flows_incomplete"):
        flows_text += f", {fmt_count(s['flows_incomplete'])} incomplete"
    created = s.get("packets_created") or 0
    dropped = s.get("packets_dropped") or 0
    headline = cards(
        [
            ("simulated time", fmt_time(s.get("sim_time_ps"))),
            ("events", fmt_count(s.get("events"))),
            ("packets delivered", fmt_count(s.get("packets_delivered"))),
            ("packets dropped", f"{fmt_count(dropped)} ({fmt_pct(dropped / created) if created else '–'})"),
            ("flows", flows_text),
        ]
    )
    description = ""
    if result.scenario is not None and getattr(result.scenario, "description", None):
        description = f"<p>{html.escape(result.scenario.description)}</p>"
    notes = list(s.get("warnings") or [])
    if s.get("interrupted") or s.get("error"):
        why = f"it failed: {s['error']}" if s.get("error") else "it was interrupted"
        notes.insert(0, f"The run stopped early ({why}): these are partial results.")
    # Wall time and events per second depend on the machine: they are in timing.json, not on the page.
    warnings = banner(notes, "Warnings: read these before the results", bad=not ok or bool(s.get("error")))
    return f"""<h1>{html.escape(title)}</h1>{description}{warnings}
<p>seed {fmt(s.get('seed'))} · conservation (created = delivered + dropped + in network;
buffer accounting matches queues): {status}</p>
{headline}
{_simulated(result)}
"""


# --------------------------------------------------------------------------
# Sections, in page order


def _matters(result: RunTables) -> str:
    """A few sentences with the figures that matter for this run."""
    s = result.summary
    labels = port_labels(result)
    items: list[str] = []
    # by name, as summary.json keeps them: a report drawn from the files later lists them alike
    for name, load in sorted((s.get("load") or {}).items()):
        carried = fmt_pct(load.get("carried")) if load.get("carried") is not None else "not measured"
        links = [x for x in str(load.get("link") or "").split(", ") if x]
        where = ", ".join(links) if len(links) <= 3 else f"its {len(links)} links ({links[0]}, ..., {links[-1]})"
        items.append(
            f"Load of {name} on {where}: asked {fmt_pct(load.get('load'))} ({load.get('load_basis')} bytes); "
            f"offered {fmt_pct(load.get('offered_wire'))} on the wire ({fmt_pct(load.get('offered_payload'))} of "
            f"payload); carried {carried}."
        )
    fct = result.fct
    if fct.height:
        for row in fct.filter(pl.col("bucket") == "all").iter_rows(named=True):
            who = "all traffic" if row["traffic"] == "all" else row["traffic"]
            if row["count"]:
                items.append(
                    f"FCT of {who}: {fmt_count(row['count'])} flows, mean {fmt_time(row['mean_fct_ps'])}, "
                    f"p99 {fmt_time(row['p99_fct_ps'])}, median slowdown {row['median_slowdown']:.3g}"
                    + (f"; {fmt_count(row['incomplete'])} incomplete" if row["incomplete"] else "") + "."
                )
    created = s.get("packets_created") or 0
    drops = result.drops
    if _has(drops, "node", "reason", "packets"):
        top = (
            _with_where(drops, labels).group_by("where", "reason").agg(pl.col("packets").sum())
            .sort(["packets", "where"], descending=[True, False]).row(0, named=True)
        )
        share = f" ({fmt_pct(s.get('packets_dropped', 0) / created)})" if created else ""
        items.append(
            f"{fmt_count(s.get('packets_dropped'))} packets dropped{share}; "
            f"most at {top['where']} ({top['reason']}, {fmt_count(top['packets'])})."
        )
    elif not s.get("packets_dropped"):
        items.append("No packet was dropped.")
    peaks = result.queue_peaks
    if _has(peaks, "node", "port", "class", "high_water_bytes"):
        top = peaks.sort(["high_water_bytes", "node", "port"], descending=[True, False, False]).row(0, named=True)
        items.append(
            f"Deepest queue: {_port(labels, top['node'], top['port'])} class {top['class']}, "
            f"{fmt_bytes(top['high_water_bytes'])} at its peak."
        )
    links, nodes = result.links, result.nodes
    if _has(links, "src", "dst", "queue_high_water_bytes") and _has(nodes, "name", "kind"):
        hosts = nodes.filter(pl.col("kind") == "host")["name"].to_list()
        out_of_hosts = links.filter(pl.col("src").is_in(hosts) & (pl.col("queue_high_water_bytes") > 0))
        if out_of_hosts.height:
            top = out_of_hosts.sort(["queue_high_water_bytes", "src"], descending=[True, False]).row(0, named=True)
            items.append(
                f"Deepest host NIC queue: {top['src']} -> {top['dst']}, {fmt_bytes(top['queue_high_water_bytes'])} "
                f"at its peak (a host's transmit queue delays its own flows before any switch sees them)."
            )
    buffers = result.buffers
    if _has(buffers, "node", "high_water_bytes", "capacity_bytes"):
        top = buffers.sort(["high_water_bytes", "node"], descending=[True, False]).row(0, named=True)
        items.append(
            f"Most buffer used: {top['node']}, {fmt_bytes(top['high_water_bytes'])} of frames "
            f"({fmt_pct(top['high_water_bytes'] / top['capacity_bytes']) if top['capacity_bytes'] else '–'} "
            f"of {fmt_bytes(top['capacity_bytes'])})."
        )
    if s.get("pfc_paused_ps"):
        items.append(
            f"PFC: {fmt_count(s.get('pfc_xoff_sent'))} XOFF frames, {fmt_time(s.get('pfc_paused_ps'))} of paused "
            "egress time in all."
        )
    if s.get("rdma_qps"):
        items.append(
            f"RDMA: {fmt_count(s.get('rdma_qps_completed'))} of {fmt_count(s.get('rdma_qps'))} queue pairs done, "
            f"{fmt_count(s.get('rdma_retransmits'))} retransmitted packets, {fmt_count(s.get('rdma_timeouts'))} timeouts."
        )
    flows = result.flows
    if _has(flows, "status", "loss_ratio", "name", "src", "dst"):
        lossy = flows.filter(pl.col("status") == "lossy")
        if lossy.height:
            worst = lossy.sort("loss_ratio", descending=True).row(0, named=True)
            items.append(
                f"{lossy.height:,} UDP flow(s) finished with losses; the worst, {worst['name']} "
                f"{worst['src']} -> {worst['dst']}, lost {fmt_pct(worst['loss_ratio'])} of its packets."
            )
    lat = class_latency(result)
    for row in lat.iter_rows(named=True):
        items.append(
            f"Latency of class {row['class']} ({fmt_count(row['packets'])} packets): p50 {fmt_time(row['p50_ps'])}, "
            f"p99 {fmt_time(row['p99_ps'])}, p99.9 {fmt_time(row['p999_ps'])}, max {fmt_time(row['max_ps'])}."
        )
    body = "".join(f"<li>{html.escape(item)}</li>" for item in items)
    return section("What matters in this run", f'<ul class="matters">{body}</ul>')


def _queues(result: RunTables) -> str:
    return section("Queues", _queue_plot(result, port_labels(result)))


def _throughput(result: RunTables) -> str:
    note = (
        '<p class="muted">Two views. <b>Carried</b>: what the wire carried (every frame, headers, retransmissions '
        "and ACKs included; a bin never exceeds the link). <b>Goodput</b>: in-order application bytes when the "
        "receiver's application gets them; after a loss is repaired a bin there can exceed the link rate "
        "(carried_links.parquet, carried_flows.parquet and throughput.parquet).</p>"
    )
    return section(
        "Throughput", note + _carried_plot(result) + _largest_flows_plot(result) + _throughput_plot(result)
    )


def _links(result: RunTables) -> str:
    return section("Links", _link_plot(result))


def _power(result: RunTables) -> str:
    """Device power over the run and energy per device (devices with a power model only)."""
    energy = result.energy
    if energy.height == 0:
        return ""
    shown = energy.select("node", "ports", "idle_w", "port_w", "bit_pj", "packet_nj", "seconds", "bytes", "frames",
                          "static_j", "dynamic_j", "energy_j", "mean_w")
    note = ('<p class="muted">power = idle + ports x port + per_bit x bits/s + per_packet x frames/s forwarded '
            "(docs/models/power.md)</p>")
    return f"<h2>Power</h2>{_power_plot(result)}{html_table(shown)}{note}\n"


def _multicast(result: RunTables) -> str:
    """Multicast sources: messages delivered to every member, delivery time to the last member, copies."""
    m = result.multicast
    if m.height == 0:
        return ""
    shown = m.select(
        "group", "src", "replication", "members", "messages", "messages_complete", "frames_sent", "copies",
        *[(pl.col(c) / 1e6).alias(c.replace("_ps", "_us")) for c in
          ("last_member_latency_mean_ps", "last_member_latency_max_ps")],
    )
    members = result.multicast_members
    per_member = ""
    if members.height:
        per_member = "<h3>Per member</h3>" + html_table(members.select(
            "src", "dst", "packets", "bytes",
            *[(pl.col(c) / 1e6).alias(c.replace("_ps", "_us")) for c in ("latency_mean_ps", "latency_max_ps")],
        ))
    return f"<h2>Multicast</h2>{html_table(shown)}{per_member}\n"


def _fabric_receivers(result: RunTables) -> str:
    """Broadcast fabrics: what each receiving adapter saw, kept and filtered out."""
    r = result.fabric_receivers
    if r.height == 0:
        return ""
    return f"<h2>Broadcast fabric receivers</h2>{html_table(r)}\n"


def _drops(result: RunTables) -> str:
    labels = port_labels(result)
    d = result.drops
    if _has(d, "node"):
        d = _with_where(d, labels)
    table = human_table(
        d,
        [Col("port", "where", str), Col("class", "class", str), Col("reason", "reason", str),
         Col("packets", "packets", fmt_count), Col("bytes", "bytes", fmt_bytes)],
    )
    return section("Drops", _drops_plot(result, labels) + table)


_FCT_COLS = [
    Col("bucket", "bucket", str),
    Col("flows", "count", fmt_count),
    Col("incomplete", "incomplete", fmt_count),
    Col("mean FCT", "mean_fct_ps", fmt_time),
    Col("median FCT", "median_fct_ps", fmt_time),
    Col("p99 FCT", "p99_fct_ps", fmt_time),
    Col("mean slowdown", "mean_slowdown", lambda v: fmt(v)),
    Col("median slowdown", "median_slowdown", lambda v: fmt(v)),
    Col("p99 slowdown", "p99_slowdown", lambda v: fmt(v)),
]


def _pipeline(result: RunTables) -> str:
    """Match-action pipelines: stage counters, pipes, waiting queues (runs with pipelines only)."""
    if result.pipeline.height == 0 and result.pipes.height == 0:
        return ""
    pipes = result.pipes
    if pipes.height:
        pipes = pipes.select(
            "node", "pipe", "ports", "offered", "issued", "queue_drops",
            (pl.col("utilization") * 100).alias("utilization_pct"),
            (pl.col("wait_mean_ps") / 1e3).alias("wait_mean_ns"),
            (pl.col("wait_max_ps") / 1e3).alias("wait_max_ns"),
            "queue_high_water_packets",
        )
    return (
        f"<h2>Pipelines</h2>{_stage_plot(result)}{_pipe_queue_plot(result)}{html_table(pipes)}"
        f'<p class="muted">per-stage counters: the pipeline table (long format)</p>\n'
    )


def _cpu_plot(result: RunTables, top: int = 8) -> str:
    """Busy share of the busiest host cores over time."""
    c = result.cpu
    if c.height == 0:
        return '<p class="muted">no CPU samples (stats.cpu_interval is 0)</p>'
    busiest = (
        c.group_by(["node", "core"]).agg(pl.col("busy_ps").sum().alias("busy"))
        .sort(["busy", "node", "core"], descending=[True, False, False]).head(top)
    )
    scale, unit = time_unit(float(c["time_ps"].max()))

    def core_series(node: Any, core: Any) -> tuple[str, Any, Any]:
        s = c.filter((pl.col("node") == node) & (pl.col("core") == core)).sort("time_ps")
        return f"{node} core {core}", s["time_ps"].to_numpy(), s["utilization"].to_numpy() * 100

    return step_plot(
        "cpu",
        (core_series(node, core) for node, core, _ in busiest.iter_rows()),
        scale,
        unit,
        "busy (%)",
        f"Host CPU utilization, {len(busiest)} busiest cores",
    )


#: Host latency components in a packet's order; the fabric's part goes between transmit and receive.
_HOST_TX = ("tx_cpu_wait", "tx_cpu", "tx_dma")
_HOST_RX = ("rx_dma", "rx_irq_wait", "rx_cpu_wait", "rx_cpu")


def latency_breakdown(result: RunTables) -> pl.DataFrame:
    """Per flow with host datapath rows: mean one-way latency split into the host components
    (``host_latency``) and the fabric (the flow's mean latency minus its host parts: wire,
    devices, queues). Flows whose packets were all delivered (UDP, ping-pong) only: a TCP
    flow's rows mix its ACKs in."""
    lat = result.host_latency
    if lat.height == 0:
        return pl.DataFrame()
    flows = result.flows.filter(pl.col("latency_mean_ps").is_not_null())
    wide = lat.pivot(on="component", index="flow_id", values="mean_ps").fill_null(0.0)
    for c in (*_HOST_TX, *_HOST_RX):
        if c not in wide.columns:
            wide = wide.with_columns(pl.lit(0.0).alias(c))
    wide = wide.with_columns(pl.col("flow_id").cast(pl.Int64))
    out = flows.select(pl.col("flow_id").cast(pl.Int64), "name", "kind", "src", "dst", "latency_mean_ps").join(
        wide, on="flow_id", how="inner")
    out = out.filter(~pl.col("kind").cast(pl.Utf8).str.contains("tcp"))
    host = sum(pl.col(c) for c in (*_HOST_TX, *_HOST_RX))
    return out.with_columns((pl.col("latency_mean_ps") - host).alias("fabric_ps")).select(
        "flow_id", "name", "src", "dst", *_HOST_TX, "fabric_ps", *_HOST_RX, "latency_mean_ps").sort("flow_id")


def packet_latency_breakdown(result: RunTables) -> pl.DataFrame:
    """Per flow, direction and packet kind of the traced packets (``packet_latency``, with
    ``stats.packet_latency``): packets, the mean of each host component and of the fabric's part,
    and one-way p50, p99 and max, exact over the traced packets. Unlike :func:`latency_breakdown`
    it separates a TCP flow's data from its ACKs."""
    rows = result.packet_latency
    if rows.height == 0:
        return pl.DataFrame()
    names = result.flows.select(pl.col("flow_id").cast(pl.Int64), "name")
    one_way = pl.col("delivered_ps") - pl.col("created_ps")
    parts = [f"{c}_ps" for c in (*_HOST_TX, "fabric", *_HOST_RX)]
    out = rows.with_columns(pl.col("flow_id").cast(pl.Int64), one_way.alias("one_way_ps")).group_by(
        "flow_id", "src", "dst", "kind").agg(
        pl.len().alias("packets"),
        *[pl.col(c).mean() for c in parts],
        pl.col("one_way_ps").quantile(0.5, "nearest").alias("p50_ps"),
        pl.col("one_way_ps").quantile(0.99, "nearest").alias("p99_ps"),
        pl.col("one_way_ps").max().alias("max_ps"),
    )
    return out.join(names, on="flow_id", how="left").select(
        "flow_id", "name", "src", "dst", "kind", "packets", *parts, "p50_ps", "p99_ps", "max_ps",
    ).sort("flow_id", "src", "kind")


def _breakdown_plot(rows: pl.DataFrame, top: int = 16) -> str:
    rows = rows.head(top)
    fig, ax = pyplot().subplots(figsize=(9, 0.35 * rows.height + 1.6))
    left = np.zeros(rows.height)
    for c in (*_HOST_TX, "fabric_ps", *_HOST_RX):
        v = rows[c].to_numpy() / 1e3
        if not v.any():
            continue
        ax.barh(range(rows.height), v, left=left, label=c.removesuffix("_ps"))
        left = left + v
    ax.set_yticks(range(rows.height))
    ax.set_yticklabels([f"{n} {a}->{b}" for n, a, b in rows.select("name", "src", "dst").iter_rows()], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("mean one-way latency (ns)")
    ax.set_title("Where the time goes (host components and fabric)")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    return figure("latency_breakdown", svg(fig))


def _hosts(result: RunTables) -> str:
    """Host datapath: per-core utilization over time, core totals, applications (runs with a host model)."""
    if (result.cores.height == 0 and result.iperf3.height == 0 and result.ping_pong.height == 0
            and result.packet_latency.height == 0):
        return ""
    parts = ["<h2>Hosts</h2>"]
    if result.cores.height:
        cores = result.cores.filter(pl.col("busy_ps") > 0).select(
            "node", "core", (pl.col("utilization") * 100).alias("utilization_pct"), "tx_packets", "rx_frames",
            "rx_skbs", "interrupts", "backlog_drops", (pl.col("wait_mean_ps") / 1e3).alias("wait_mean_ns"),
        )
        parts += [_cpu_plot(result), html_table(cores)]
    if result.iperf3.height:
        parts.append(html_table(result.iperf3.select("name", "instance", "src_core", "dst_core", "gbps", "packets_per_s")))
    if result.ping_pong.height:
        pp = result.ping_pong.select(
            "name", "message_bytes", "messages", "lost",
            *[(pl.col(f"latency_{q}_ps") / 1e6).alias(f"{q}_us") for q in ("mean", "p50", "p99", "p999", "max")],
        )
        parts.append(html_table(pp))
    breakdown = latency_breakdown(result)
    if breakdown.height:
        parts += ["<h3>Where the time goes</h3>", _breakdown_plot(breakdown),
                  html_table(breakdown.with_columns(pl.col(pl.Float64).round(1)), limit=50)]
    per_packet = packet_latency_breakdown(result)
    if per_packet.height:
        parts += ["<h3>Where the time goes, per packet</h3>",
                  f"<p>{result.packet_latency.height} traced packets (<code>stats.packet_latency</code>), "
                  "by flow, direction and kind: mean of each part, one-way percentiles (ps).</p>",
                  html_table(per_packet.with_columns(pl.col(pl.Float64).round(1)), limit=50)]
    return "".join(parts) + "\n"


def _fairness(result: RunTables) -> str:
    """Per-source shares of receivers with several sources, and of arbitrated egress ports."""
    shares = result.source_shares
    fair = result.fairness
    if shares.height == 0 and fair.height == 0:
        return ""
    out = "<h2>Fairness</h2>"
    if shares.height:
        per_dst = shares.group_by("dst").agg(
            pl.col("sources").first(), pl.col("share_min").first(), pl.col("share_max").first(),
            pl.col("jain").first(),
        ).sort("dst")
        out += _share_plot(shares) + html_table(per_dst)
    if fair.height:
        out += "<p>Egress ports with input arbitration (shares by input port):</p>" + html_table(fair)
    return out + "\n"


def _fct(result: RunTables) -> str:
    """FCT per size bucket, overall and per traffic entry; CDF and slowdown by size."""
    fct = result.fct
    if fct.height == 0:
        return ""
    from fabricsim.outputs.fct import flow_table

    if "traffic" not in fct.columns:
        fct = fct.with_columns(pl.lit("all").alias("traffic"))
    overall = fct.filter(pl.col("traffic") == "all")
    parts = [_fct_plot(overall), "<h3>All traffic</h3>", human_table(overall, _FCT_COLS)]
    entries = [t for t in dict.fromkeys(fct["traffic"].to_list()) if t != "all"]
    if len(entries) > 1:
        for entry in entries:
            parts.append(f"<h3>{html.escape(entry)}</h3>")
            parts.append(human_table(fct.filter(pl.col("traffic") == entry), _FCT_COLS))
    if result.scenario is not None and result.links.height:
        per_flow = flow_table(result)
        parts.append(_fct_cdf_plot(per_flow))
        parts.append(_slowdown_plot(per_flow))
    small = overall.filter((pl.col("count") > 0) & (pl.col("count") < 100)) if "count" in overall.columns else overall
    if small.height:
        parts.append('<p class="muted">A p99 over fewer than 100 flows is the largest or nearly the largest value: '
                     + html.escape(", ".join(f"{b} has {n:,}" for b, n in small.select("bucket", "count").iter_rows()))
                     + " flows.</p>")
    parts.append('<p class="muted">slowdown = FCT / ideal FCT on an empty network (fabricsim.outputs.fct); '
                 "fct.parquet has the exact values in picoseconds</p>")
    return section("Flow completion time", "".join(parts))


def _latency(result: RunTables) -> str:
    lat = class_latency(result)
    if lat.height == 0:
        return ""
    table = human_table(
        lat,
        [Col("class", "class", str), Col("packets", "packets", fmt_count), Col("min", "min_ps", fmt_time),
         Col("p50", "p50_ps", fmt_time), Col("p99", "p99_ps", fmt_time), Col("p99.9", "p999_ps", fmt_time),
         Col("max", "max_ps", fmt_time)],
    )
    note = ('<p class="muted">One-way latency of data packets (creation at the source to delivery at the '
            "destination) from per-flow log-bucketed histograms (latency_hist.parquet): a percentile is within "
            "1.6 % of the exact value; min and max are exact.</p>")
    return section("Latency by traffic class", table + note)


def _buffers(result: RunTables) -> str:
    b = result.buffers
    if not _has(b, "node"):
        return ""
    cols = [Col("switch", "node", str), Col("model", "model", str), Col("size", "capacity_bytes", fmt_bytes),
            Col("most frame bytes held", "high_water_bytes", fmt_bytes)]
    if "high_water_cells" in b.columns and b["cell_bytes"].drop_nulls().len():
        cols += [Col("cell", "cell_bytes", fmt_bytes), Col("cells", "capacity_cells", fmt_count),
                 Col("cells set aside", "reserved_cells", fmt_count),
                 Col("most cells held", "high_water_cells", fmt_count)]
    labels = port_labels(result)
    peaks = result.queue_peaks
    peak_table = ""
    if _has(peaks, "node", "port", "high_water_bytes"):
        peaks = _with_where(peaks.sort(["high_water_bytes", "node", "port"], descending=[True, False, False]), labels)
        peak_table = "<h3>Deepest queues</h3>" + human_table(
            peaks, [Col("port", "where", str), Col("class", "class", str),
                    Col("peak", "high_water_bytes", fmt_bytes)], limit=10)
    return section("Buffers", human_table(b, cols) + peak_table)


def _pauses(result: RunTables) -> str:
    p = result.pauses
    if not _has(p, "node", "port", "paused_ps"):
        return ""
    p = _with_where(p.sort("paused_ps", descending=True), port_labels(result))
    return section("PFC pauses", human_table(
        p, [Col("port", "where", str), Col("priority", "priority", str), Col("XOFF sent", "xoff_sent", fmt_count),
            Col("XOFF received", "xoff_received", fmt_count), Col("paused", "paused_ps", fmt_time)]))


def _flows(result: RunTables) -> str:
    flows = result.flows
    if not _has(flows, "src", "dst"):
        return ""
    shown = flows
    sent = pl.col("bytes_sent") if "bytes_sent" in shown.columns else pl.lit(None, dtype=pl.UInt64)
    if "size_bytes" in shown.columns:
        shown = shown.with_columns(pl.col("size_bytes").fill_null(sent).alias("_size"))
    else:
        shown = shown.with_columns(sent.alias("_size"))
    if "flow_id" not in shown.columns:
        shown = shown.with_row_index("flow_id")
    shown = shown.with_columns((pl.col("src") + " -> " + pl.col("dst")).alias("_path"))
    # A UDP stream has no completion: its "FCT" would be the time it ran, so it is not shown as one.
    streams = ("udp_cbr", "udp_poisson", "burst")
    if "kind" in shown.columns and "fct_ps" in shown.columns:
        shown = shown.with_columns(
            pl.when(pl.col("kind").is_in(list(streams))).then(None).otherwise(pl.col("fct_ps")).alias("_fct"))
    else:
        shown = shown.with_columns(pl.lit(None, dtype=pl.Int64).alias("_fct"))
    cols = [
        Col("flow", "name", str), Col("kind", "kind", str), Col("path", "_path", str), Col("class", "class", str),
        Col("size / sent", "_size", fmt_bytes), Col("status", "status", str),
        Col("dropped", "loss_ratio", fmt_pct), Col("FCT (transfers)", "_fct", fmt_time),
        Col("latency p50", "latency_p50_ps", fmt_time), Col("p99", "latency_p99_ps", fmt_time),
        Col("p99.9", "latency_p999_ps", fmt_time), Col("max", "latency_max_ps", fmt_time),
        Col("retransmits", "retransmits", fmt_count),
    ]
    largest = shown.sort(["_size", "flow_id"], descending=[True, False]) if shown.height > 50 else shown
    note = " (the largest are shown) in flows.parquet" if shown.height > 50 else ""
    return section("Flows", human_table(largest, cols, limit=50, note=note))


def _trace_series(trace: pl.DataFrame, flows: list[int], column: str, factor: float):
    """Per traced flow: ``(label, times, values)`` of ``column`` x ``factor`` (``step_plot`` keeps
    of a long trace the points its plot can show, every extreme among them)."""
    for flow in flows:
        rows = trace.filter((pl.col("flow_id") == flow) & pl.col(column).is_not_null())
        yield f"flow {flow}", rows["time_ps"].to_numpy(), rows[column].to_numpy() * factor


def _tcp_trace(result: RunTables, top: int = 8) -> str:
    """cwnd and SRTT over time of the first traced flows (``stats.tcp_trace``), and their event rows."""
    trace = _table(result, "tcp_trace")
    if trace.height == 0:
        return ""
    flows = sorted(set(trace["flow_id"].to_list()))
    shown = flows[:top]
    scale, unit = time_unit(float(trace["time_ps"].max()))
    which = f"{len(shown)} of {len(flows)} traced flows" if len(flows) > len(shown) else f"{len(shown)} traced flows"
    cwnd = step_plot(
        "tcp_trace_cwnd", _trace_series(trace, shown, "cwnd_segments", 1.0), scale, unit, "cwnd (segments)",
        f"Congestion window, {which}",
    )
    srtt = step_plot(
        "tcp_trace_srtt", _trace_series(trace, shown, "srtt_ps", 1e-6), scale, unit, "SRTT (us)",
        f"Smoothed RTT, {which}",
    )
    events = (
        trace.group_by("flow_id")
        .agg(
            pl.len().alias("rows"),
            (pl.col("event") == "recovery_start").sum().alias("recoveries"),
            (pl.col("event") == "rto").sum().alias("timeouts"),
            pl.col("cwnd_segments").max().alias("max_cwnd"),
            pl.col("min_rtt_ps").min().alias("min_rtt"),
            pl.col("srtt_ps").max().alias("max_srtt"),
        )
        .sort("flow_id")
    )
    cols = [
        Col("flow", "flow_id", str), Col("rows", "rows", fmt_count), Col("recoveries", "recoveries", fmt_count),
        Col("timeouts", "timeouts", fmt_count), Col("max cwnd (segments)", "max_cwnd", fmt_count),
        Col("min RTT", "min_rtt", fmt_time), Col("max SRTT", "max_srtt", fmt_time),
    ]
    missed = result.summary.get("tcp_trace_missed", 0)
    note = f'<p class="muted">{fmt_count(missed)} rows past max_rows not kept</p>' if missed else ""
    return section("TCP sender state", cwnd + srtt + human_table(events, cols, note=" in tcp_trace.parquet") + note)


def _summary(result: RunTables) -> str:
    s = {k: v for k, v in result.summary.items() if k not in ("warnings", "load")}
    rows = pl.DataFrame({"counter": list(s.keys()), "value": [fmt(v) for v in s.values()]})
    return "<h2>All counters</h2>" + details(f"{len(s)} summary counters (summary.json)", html_table(rows, limit=500))


SECTIONS: tuple[Section, ...] = (
    _matters,
    _queues,
    _throughput,
    _links,
    _power,
    _multicast,
    _fabric_receivers,
    _drops,
    _pipeline,
    _hosts,
    _fairness,
    _fct,
    _latency,
    _buffers,
    _pauses,
    _flows,
    _tcp_trace,
    _summary,
)
"""The sections below the heading, top to bottom."""


def register_section(function: Section, before: Optional[Section] = None) -> None:
    """Add ``function`` to :data:`SECTIONS`, before ``before`` (default: before the collapsed counters)."""
    global SECTIONS
    sections = list(SECTIONS)
    index = sections.index(before if before is not None else _summary)
    sections.insert(index, function)
    SECTIONS = tuple(sections)


def _render(part: Section, result: RunTables) -> str:
    """One section; a section that fails shows its error instead of taking the page down."""
    try:
        return part(result)
    except Exception as exc:  # a broken section must not hide the others
        name = getattr(part, "__name__", "section").strip("_")
        return (f'<p class="bad section-error">the {html.escape(name)} section could not be drawn: '
                f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</p>")


def render_html(result: RunTables, title: Optional[str] = None) -> str:
    """The report page for ``result`` as one HTML string."""
    name = title or str(result.summary.get("scenario", "run"))
    body = "\n" + _render(lambda r: _heading(r, name), result) + "".join(_render(part, result) for part in SECTIONS)
    return html_page(name, body)


def write_report(result: RunTables, path: str | Path) -> Path:
    """Write the report page to ``path``, its plots as SVG files to ``plots/``
    beside it, and return the page's path."""
    p = Path(path)
    page_text = render_html(result)
    p.write_text(page_text, encoding="utf-8")
    write_plot_files(page_text, p.parent / "plots")
    return p
