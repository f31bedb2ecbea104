"""The RFC 2544 page: one section per test, a plot per frame size and the table, one series per device."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Mapping

import polars as pl

from fabricsim.outputs.report.html import figure, html_page, html_table, write_plot_files
from fabricsim.outputs.report.plots import pyplot, svg

__all__ = ["render_rfc2544", "write_rfc2544"]


def _by_device(table: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    return [(str(name), table.filter(pl.col("device") == name)) for name in table["device"].unique(maintain_order=True)]


def _size_axis(table: pl.DataFrame) -> tuple[list[int], dict[int, int]]:
    """The frame sizes of ``table`` in order, and each one's position on an evenly spaced x axis."""
    sizes = sorted(set(table["frame_bytes"].to_list()))
    return sizes, {size: i for i, size in enumerate(sizes)}


def _finish_size_axes(fig, ax, name: str, sizes: list[int], ylabel: str, title: str, legend_size: int) -> str:
    """Frame sizes on the x axis (evenly spaced), zero-based y axis, title, grid, legend; the figure."""
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([str(s) for s in sizes])
    ax.set_xlabel("frame size (bytes)")
    ax.set_ylim(bottom=0)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=legend_size)
    return figure(name, svg(fig))


def _size_plot(name: str, table: pl.DataFrame, column: str, scale: float, ylabel: str, title: str,
               reference: str | None = None) -> str:
    fig, ax = pyplot().subplots(figsize=(9, 3.6))
    sizes, positions = _size_axis(table)
    for device, rows in _by_device(table):
        x = [positions[s] for s in rows["frame_bytes"].to_list()]
        ax.plot(x, rows[column].to_numpy() / scale, marker="o", label=device)
        if reference is not None:
            ax.plot(x, rows[reference].to_numpy() / scale, linestyle=":", color="#888",
                    label="line rate" if device == _by_device(table)[0][0] else None)
    return _finish_size_axes(fig, ax, name, sizes, ylabel, title, legend_size=8)


def _loss_plot(table: pl.DataFrame) -> str:
    fig, ax = pyplot().subplots(figsize=(9, 3.6))
    for device, rows in _by_device(table):
        for size in sorted(set(rows["frame_bytes"].to_list())):
            r = rows.filter(pl.col("frame_bytes") == size).sort("load")
            ax.plot(r["load"].to_numpy() * 100, r["loss_percent"].to_numpy(), marker=".", label=f"{device} {size} B")
    ax.set_xlabel("offered load (% of line rate)")
    ax.set_ylabel("frame loss (%)")
    ax.set_title("Frame loss rate (RFC 2544 26.3)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return figure("rfc2544_loss", svg(fig))


#: The stacked parts of an end-to-end latency, in a message's order: (column, label).
E2E_PARTS = (
    ("stack_tx_ps", "stack tx"),
    ("nic_tx_ps", "NIC tx DMA"),
    ("serialization_ps", "serialization"),
    ("header_ps", "cut-through header"),
    ("device_ps", "device"),
    ("propagation_ps", "cable/optics"),
    ("host_ps", "fixed host latency"),
    ("nic_rx_ps", "NIC rx DMA"),
    ("irq_wait_ps", "interrupt wait"),
    ("stack_rx_ps", "stack rx"),
)


def series_label(row: Mapping[str, object]) -> str:
    return f"{row['device']} {row['stack']}"


def breakdown_plot(name: str, table: pl.DataFrame, title: str) -> str:
    """Stacked bars of where an unloaded message's one-way latency goes: one bar per frame size
    and series (fabric and stack), from the closed-form parts of the ``host_latency`` table."""
    rows = table.sort(["device", "stack", "frame_bytes"], maintain_order=True).to_dicts()
    parts = [(c, label) for c, label in E2E_PARTS if c in table.columns and any(r[c] for r in rows)]
    fig, ax = pyplot().subplots(figsize=(max(9, 0.32 * len(rows) + 2), 4.2))
    bottom = [0.0] * len(rows)
    for column, label in parts:
        values = [float(r[column]) / 1e3 for r in rows]
        ax.bar(range(len(rows)), values, bottom=bottom, label=label, width=0.8)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{series_label(r)} {r['frame_bytes']}" for r in rows], rotation=90, fontsize=6)
    ax.set_ylabel("one-way latency (ns)")
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return figure(name, svg(fig))


def _series_plot(name: str, table: pl.DataFrame, column: str, scale: float, ylabel: str, title: str,
                 reference: str | None = None) -> str:
    fig, ax = pyplot().subplots(figsize=(9, 3.6))
    sizes, positions = _size_axis(table)
    for (device, stack), rows in table.group_by(["device", "stack"], maintain_order=True):
        x = [positions[s] for s in rows["frame_bytes"].to_list()]
        line = ax.plot(x, rows[column].to_numpy() / scale, marker="o", label=f"{device} {stack}")[0]
        if reference is not None and rows[reference].null_count() < rows.height:
            ax.plot(x, rows[reference].cast(pl.Float64).to_numpy() / scale, linestyle=":", color=line.get_color())
    return _finish_size_axes(fig, ax, name, sizes, ylabel, title, legend_size=7)


def render_rfc2544(tables: Mapping[str, pl.DataFrame], title: str = "RFC 2544") -> str:
    """The page for the tables returned by :func:`fabricsim.experiments.rfc2544.rfc2544`."""
    body = [f"<h1>{html.escape(title)}</h1>",
            '<p class="muted">Method and simulated-trial rules: docs/models/rfc2544.md.</p>']
    t = tables.get("throughput")
    if t is not None and t.height:
        body.append("<h2>Throughput (26.1)</h2>")
        body.append(_size_plot("rfc2544_throughput", t, "frames_per_s", 1e6, "Mframes/s",
                               "Highest rate without loss", reference="line_frames_per_s"))
        body.append(_size_plot("rfc2544_socket", t, "udp_payload_MBps", 1.0, "MB/s",
                               "UDP payload at the throughput rate"))
        body.append(html_table(t))
    t = tables.get("latency")
    if t is not None and t.height:
        body.append("<h2>Latency (26.2)</h2>")
        body.append(_size_plot("rfc2544_latency", t, "latency_ps", 1e3, "ns",
                               "RFC 1242 latency of the devices between the tester ports"))
        body.append(_size_plot("rfc2544_e2e", t, "e2e_mean_ps", 1e3, "ns",
                               "End-to-end one-way latency (host to host)"))
        body.append(html_table(t))
    t = tables.get("loss")
    if t is not None and t.height:
        body.append(f"<h2>Frame loss rate (26.3)</h2>{_loss_plot(t)}{html_table(t, limit=200)}")
    t = tables.get("back_to_back")
    if t is not None and t.height:
        body.append("<h2>Back-to-back frames (26.4)</h2>")
        body.append(_size_plot("rfc2544_back_to_back", t, "frames", 1.0, "frames", "Longest burst without loss"))
        body.append(html_table(t))
    t = tables.get("host_latency")
    if t is not None and t.height:
        body.append("<h2>End-to-end latency through the hosts (UDP ping-pong)</h2>")
        body.append('<p class="muted">Half the round trip of one outstanding message, application to '
                    "application; closed form (dotted) from the host model's and the fabric's parameters.</p>")
        body.append(_series_plot("rfc2544_host_latency", t, "latency_ps", 1e6, "us",
                                 "One-way latency (half round trip)", reference="closed_form_ps"))
        body.append(breakdown_plot("rfc2544_breakdown", t, "Where the time goes (unloaded, one way)"))
        body.append(html_table(t.select([c for c in t.columns if not c.startswith("detail_")])))
    t = tables.get("socket")
    if t is not None and t.height:
        body.append("<h2>Socket throughput per message size</h2>")
        body.append('<p class="muted">A streaming application, one message per datagram (UDP) or per write '
                    "(TCP); dotted: the closed form, the smallest of wire goodput and message / CPU time per "
                    "message on the sending and receiving cores.</p>")
        body.append(_series_plot("rfc2544_socket_MBps", t, "MBps", 1.0, "MB/s", "Messages received",
                                 reference="closed_form_MBps"))
        body.append(html_table(t))
    t = tables.get("skipped")
    if t is not None and t.height:
        body.append(f"<h2>Skipped (above the path's MTU)</h2>{html_table(t)}")
    return html_page(title, "\n".join(body))


def write_rfc2544(tables: Mapping[str, pl.DataFrame], out_dir: str | Path, title: str = "RFC 2544") -> list[Path]:
    """Write ``rfc2544_<test>.parquet`` for each non-empty table, ``rfc2544.html`` and its plots."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables.items():
        if frame.height:
            path = out / f"rfc2544_{name}.parquet"
            frame.write_parquet(path, compression="zstd")
            written.append(path)
    page = render_rfc2544(tables, title)
    path = out / "rfc2544.html"
    path.write_text(page, encoding="utf-8")
    write_plot_files(page, out / "plots")
    written.append(path)
    return written
