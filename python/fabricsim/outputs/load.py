"""Offered and carried load of each ``workload`` traffic entry on the link it is calibrated on.

For every workload entry (see :mod:`fabricsim.workloads.flowgen`) the summary
gets ``load.<entry>`` with:

- ``link``: the target link(s): the access link into the host named by
  ``load_on`` (``many_to_one``: the requester), or with ``load_on: sources``
  the access links out of the senders;
- ``load`` and ``load_basis``: what the scenario asked for, and whether it
  counts wire or application (payload) bytes;
- ``offered_wire`` / ``offered_payload``: what the generated flows that
  start in the arrivals window offer, as a fraction of the target capacity,
  counting wire bytes (SYN and data frames with headers, preamble and gap) or
  application bytes;
- ``carried``: what the target link(s) actually carried in the window, from
  ``carried_links`` (transmitter busy time x rate over whole bins inside the
  window, every frame counted: this entry's, other entries' and ACKs going the
  same way); ``None`` without throughput bins (``stats.throughput_interval: 0``)
  or when no whole bin fits in the window.
"""

from __future__ import annotations

from typing import Any, Optional

import polars as pl

from fabricsim.outputs.tables import RunTables

__all__ = ["load_summary", "target_links"]


def target_links(plan: dict[str, Any], entry: Any) -> tuple[str, list[str]]:
    """(direction ``into`` or ``out_of``, hosts) of an entry's calibration link(s)."""
    load_on = plan["load_on"]
    if load_on == "sources":
        return "out_of", list(dict.fromkeys(plan["senders"]))
    if load_on == "requester":
        return "into", [entry.requester]
    return "into", [load_on]


def _carried(result: RunTables, links: pl.DataFrame, start: int, stop: int, capacity_bps: float) -> Optional[float]:
    interval = int(result.scenario.stats.throughput_interval) if result.scenario is not None else 0
    carried = result.tables().get("carried_links", pl.DataFrame())
    if interval <= 0 or carried.height == 0 or "busy_ps" not in carried.columns:
        return None
    first = -(-start // interval) * interval
    last = (stop // interval) * interval
    if last <= first:
        return None
    rates = links.select("src", "dst", "rate_bps").unique(subset=["src", "dst"], keep="last", maintain_order=True)
    rows = carried.filter((pl.col("time_ps") >= first) & (pl.col("time_ps") < last))
    rows = rows.select("src", "dst", "busy_ps").join(rates, on=["src", "dst"], how="inner", maintain_order="left")
    if rows.height == 0:
        return 0.0
    import numpy as np

    # Each bin's bits as (busy * 1e-12) * rate, summed in row order (a cumulative
    # sum adds left to right, as a loop over the rows would).
    bits = rows["busy_ps"].cast(pl.Float64).to_numpy() * 1e-12 * rows["rate_bps"].cast(pl.Float64).to_numpy()
    return float(np.cumsum(bits)[-1]) / (capacity_bps * (last - first) * 1e-12)


def load_summary(result: RunTables) -> dict[str, dict[str, Any]]:
    """``{entry name: {link, load, load_basis, offered_wire, offered_payload, carried}}``
    for every workload entry of the run's scenario (empty without one)."""
    scenario = result.scenario
    if scenario is None or not any(entry.kind == "workload" for entry in scenario.traffic):
        return {}
    from fabricsim.workloads import flowgen  # numpy; only runs with workloads get here

    flows = result.flows
    links = result.links
    out: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(scenario.traffic):
        if entry.kind != "workload":
            continue
        plan = flowgen.plan(scenario, index)
        direction, hosts = target_links(plan, entry)
        column = "dst" if direction == "into" else "src"
        chosen = links.filter(pl.col(column).is_in(hosts)) if links.height else links
        names = [f"{a} -> {b}" for a, b in chosen.select("src", "dst").iter_rows()] if chosen.height else []
        start, stop = int(plan["start_ps"]), int(plan["stop_ps"])
        window_s = (stop - start) * 1e-12
        capacity = float(plan["rate_bps"])
        mine = flows.filter((pl.col("name") == entry.name)) if flows.height and "size_bytes" in flows.columns else None
        offered_wire = offered_payload = 0.0
        if mine is not None and mine.height:
            mine = mine.filter((pl.col("start_ps") >= start) & (pl.col("start_ps") < stop))
            tcp = entry.tcp if entry.tcp is not None else scenario.tcp
            sizes = mine["size_bytes"].to_numpy()
            wire = flowgen.flow_wire_bytes(sizes, tcp, scenario.network.ethernet_overhead)
            offered_wire = float(wire.sum()) * 8 / (capacity * window_s)
            offered_payload = float(sizes.sum()) * 8 / (capacity * window_s)
        out[entry.name] = {
            "link": ", ".join(names),
            "load": plan["load"],
            "load_basis": plan["load_basis"],
            "offered_wire": offered_wire,
            "offered_payload": offered_payload,
            "carried": _carried(result, chosen, start, stop, capacity) if chosen.height else None,
        }
    return out
