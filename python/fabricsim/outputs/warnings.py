"""Warnings about a scenario or a run that a careful reader must not miss.

:func:`scenario_warnings` looks at the scenario before it runs (a buffer
smaller than the largest frame the traffic sends, which drops every such
frame); :func:`run_warnings` adds what the run's summary shows (the drain
limit cut the run with flows unfinished, conservation violated). The run's
``summary.json`` lists them under ``warnings``; the CLI prints them and the
report shows them in a banner at the top.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional

from fabricsim import units

if TYPE_CHECKING:
    from fabricsim.schema import Scenario

__all__ = ["largest_frame", "run_warnings", "scenario_warnings"]


def largest_frame(scenario: "Scenario") -> tuple[int, str]:
    """(bytes, which traffic) of the largest frame the scenario's traffic can send."""
    from fabricsim.schema.transports import Roce

    best = (0, "")
    for index, entry in enumerate(scenario.traffic):
        if entry.kind in ("udp_cbr", "udp_poisson", "burst"):
            size = entry.frame_size
        elif entry.kind in ("rdma_write", "rdma_flows") or getattr(entry, "transport", "tcp") == "roce":
            roce = entry.roce or scenario.roce or Roce()
            size = roce.mtu + roce.header
        else:
            tcp = entry.tcp if getattr(entry, "tcp", None) is not None else scenario.tcp
            size = tcp.mtu + tcp.l2_header
        if size > best[0]:
            best = (size, f"traffic[{index}] ({entry.name})")
    return best


def _buffers(scenario: "Scenario") -> Iterator[tuple[str, str, int]]:
    """(field path, what, bytes) of every buffer limit a single frame must fit in."""
    switches = [("network.switch", scenario.network.switch)]
    switches += [(f"network.switch_overrides.{name}", spec) for name, spec in scenario.network.switch_overrides.items()]
    for path, switch in switches:
        b = switch.buffer
        if b.model == "static":
            yield f"{path}.buffer.port_size", "port buffer", b.port_size
            if b.queue_size is not None:
                yield f"{path}.buffer.queue_size", "queue limit", b.queue_size
        elif b.size is not None:
            yield f"{path}.buffer.size", "buffer", b.size
            if b.model == "voq" and b.voq_limit is not None and b.voq_limit[0] == "size":
                yield f"{path}.buffer.voq_limit", "VOQ limit", b.voq_limit[1]
            if b.model == "intelligent" and b.port_max is not None:
                yield f"{path}.buffer.port_max", "per-port limit", b.port_max
    yield "network.host.nic_buffer", "host NIC buffer", scenario.network.host.nic_buffer


def scenario_warnings(scenario: "Scenario") -> list[str]:
    """Problems visible in the scenario itself."""
    frame, where = largest_frame(scenario)
    out = []
    if frame:
        for path, what, size in _buffers(scenario):
            if size < frame:
                out.append(
                    f"{path} is {size:,} B, smaller than the largest frame ({frame:,} B, {where}): "
                    f"that {what} drops every such frame. A size without a unit is in bytes "
                    f"(write e.g. '{size}KB' or '{size}MB')."
                )
    return out


def _largest_incomplete(flows: Any) -> str:
    """``; the largest: 1.02 GB (h3 -> h24), ...`` for the biggest unfinished flows, if known."""
    if flows is None or getattr(flows, "height", 0) == 0 or "status" not in flows.columns:
        return ""
    import polars as pl

    size = "size_bytes" if "size_bytes" in flows.columns else "bytes_sent"
    left = flows.filter(pl.col("status") == "incomplete").sort(size, descending=True, nulls_last=True).head(3)
    if left.height == 0:
        return ""
    shown = [
        f"{(value or 0) / 1e6:,.1f} MB ({src} -> {dst})"
        for value, src, dst in left.select(size, "src", "dst").iter_rows()
    ]
    return "; the largest: " + ", ".join(shown)


def _unfinished_transfers(flows: Any, incomplete: int) -> int:
    """Incomplete flows with a size to transfer (TCP, RDMA); ``incomplete`` when the table cannot tell."""
    if flows is None or getattr(flows, "height", 0) == 0 or "status" not in flows.columns:
        return incomplete
    if "size_bytes" not in flows.columns:
        return 0
    import polars as pl

    return flows.filter((pl.col("status") == "incomplete") & pl.col("size_bytes").is_not_null()).height


#: A workload entry that offers less than this fraction of the load it asks for is named.
OFFERED_SHORTFALL = 0.9


def _load_shortfalls(summary: Mapping[str, Any]) -> list[str]:
    out = []
    for name, load in sorted((summary.get("load") or {}).items()):
        asked = load.get("load")
        basis = load.get("load_basis") or "wire"
        offered = load.get("offered_payload" if basis == "payload" else "offered_wire")
        if asked and offered is not None and offered < OFFERED_SHORTFALL * asked:
            links = [x for x in (load.get("link") or "").split(", ") if x]
            where = (", ".join(links) if len(links) <= 3 else f"its {len(links)} target links ({links[0]}, ...)") \
                if links else "its target link"
            out.append(
                f"workload {name!r} offered {offered:.1%} of {where} ({basis} "
                f"bytes) against the {asked:.0%} it asks for: the flows drawn in its arrivals window are too few "
                "to reach the target (heavy-tailed sizes need a longer window); every load-dependent result "
                "is at the offered load, not the asked one. Lengthen the arrivals window (duration).")
    return out


def _truncated_ping_pongs(scenario: "Scenario", tables: Mapping[str, Any]) -> list[str]:
    table = tables.get("ping_pong")
    out = []
    entries = [e for e in scenario.traffic if e.kind == "ping_pong" and getattr(e, "messages", None)]
    if table is None or not entries or table.height == 0 or "name" not in table.columns:
        return out
    done = {name: int(m) + int(lost) for name, m, lost in table.select("name", "messages", "lost").iter_rows()}
    for entry in entries:
        ran = done.get(entry.name)
        if ran is not None and ran < entry.messages:
            out.append(
                f"ping_pong {entry.name!r} asked for {entry.messages:,} messages; {ran:,} ran before the run ended "
                f"(duration {units.format_time(scenario.duration)}): its latency percentiles are from those "
                "only. Lengthen duration.")
    return out


def run_warnings(scenario: "Scenario", summary: Mapping[str, Any], flows: Any = None,
                 tables: Optional[Mapping[str, Any]] = None) -> list[str]:
    """:func:`scenario_warnings` plus what the run's ``summary`` (and its ``flows`` and other
    ``tables``) shows: the drain limit, unfinished transfers, a workload that offered
    less than it asks for, ping-pongs cut short by the end of the run, a violated
    conservation check."""
    out = scenario_warnings(scenario)
    out += _load_shortfalls(summary)
    out += _truncated_ping_pongs(scenario, tables or {})
    incomplete = int(summary.get("flows_incomplete") or 0)
    if summary.get("drain_limit_reached"):
        limit = units.format_time(scenario.duration + scenario.drain_limit, 3)
        out.append(
            f"drain limit reached: the run stopped at {limit} (duration {units.format_time(scenario.duration)} + "
            f"drain_limit {units.format_time(scenario.drain_limit)}) with {incomplete:,} flow(s) incomplete"
            f"{_largest_incomplete(flows)} and {int(summary.get('packets_in_network') or 0):,} packet(s) still in "
            "the network; incomplete flows have no FCT and are left out of the FCT statistics. Raise drain_limit "
            "or shorten the arrivals window."
        )
    else:
        # Without a drain limit cut, only unfinished transfers (TCP, RDMA) matter:
        # a UDP stream stopped by the end of the run has no completion time anyway.
        unfinished = _unfinished_transfers(flows, incomplete)
        if unfinished:
            why = " before the run ended (drain is off)" if not scenario.drain else ""
            out.append(f"{unfinished:,} TCP/RDMA transfer(s) did not finish{why}; they have no FCT.")
    if summary.get("conservation_ok") is False or summary.get("buffer_accounting_ok") is False:
        out.append("packet conservation or buffer accounting was VIOLATED: the results are not trustworthy.")
    return out
