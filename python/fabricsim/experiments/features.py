"""Forwarding with packet-processing features, and fairness among many
sources: the procedures behind ``scenarios/esg-acl.yaml`` and
``scenarios/esg-fairness.yaml``.

:func:`forwarding` runs a scenario once per (device, frame size), with every
UDP source's frame size set, and reports throughput as a percentage of the
sending ports' line rate (delivered frames per second in the steady part of
the run over the line rate's frames per second, RFC 2544 style) and one-way
latency.

:func:`fairness` runs a fan-in scenario once per (device, number of sources,
frame size): ``n`` source hosts drawn at random (seeded) from every host but
the destination become the ``src`` of each of the scenario's traffic entries
(give them a ``start_jitter``: traffic generators' ports are not
phase-locked), and it reports each source's share of the destination's received bytes, with
the smallest and largest share, Jain's index, and the share the device's
arbitration rule predicts (:func:`fabricsim.outputs.shares.hierarchical_shares`
over the input groups the core reports, or max-min fairness for a device
without input arbitration).
"""

from __future__ import annotations

import copy
import os
import random
from typing import Any, Optional, Sequence, Union

import polars as pl

from fabricsim.errors import ScenarioError
from fabricsim.outputs.shares import hierarchical_shares
from fabricsim.runner import run
from fabricsim.schema import Scenario, from_dict, load

__all__ = ["FAIRNESS_FRAME_SIZES", "FAIRNESS_SOURCES", "FORWARDING_FRAME_SIZES", "fairness", "forwarding"]

FORWARDING_FRAME_SIZES = (64, 82, 97)
FAIRNESS_SOURCES = (6, 8, 16)
FAIRNESS_FRAME_SIZES = (64, 97, 1280)
_UDP = ("udp_cbr", "udp_poisson", "burst")


def _base(scenario: Union[Scenario, str, "os.PathLike[str]"], overrides: Sequence[str]) -> tuple[Scenario, dict]:
    sc = scenario if isinstance(scenario, Scenario) else load(scenario, overrides)
    return sc, sc.source_data or sc.model_dump(mode="json", by_alias=True)


def _with_device(doc: dict[str, Any], device: Optional[str]) -> dict[str, Any]:
    if device is not None:
        network = doc.setdefault("network", {}) or {}
        doc["network"] = network
        network["switch"] = {**(network.get("switch") or {}), "device": device}
    return doc


def _device_name(sc: Scenario, device: Optional[str]) -> str:
    return device or sc.network.switch.device or "scenario"


def _line_pps(result: Any, frame: int, overhead: int) -> dict[str, float]:
    """Frames per second at line rate of each host's link, by host name."""
    links = result.links
    return {src: rate / ((frame + overhead) * 8) for src, rate in zip(links["src"], links["rate_bps"])}


def forwarding(
    scenario: Union[Scenario, str, "os.PathLike[str]"],
    frame_sizes: Sequence[int] = FORWARDING_FRAME_SIZES,
    devices: Sequence[Optional[str]] = (None,),
    overrides: Sequence[str] = (),
    warmup: float = 0.25,
) -> pl.DataFrame:
    """Throughput (% of line rate) and latency per device and frame size.

    Throughput counts the frames each flow delivered in the throughput bins
    after ``warmup`` (a fraction of the duration), over the frames its source
    port carries at line rate in that time. Columns: ``device``,
    ``frame_bytes``, ``flows``, ``throughput_pct`` (all flows), ``throughput_min_pct``
    (the worst flow), ``latency_min_ns``, ``latency_mean_ns``,
    ``latency_max_ns``, ``packets_dropped``, ``pipeline_queue_drops``.
    """
    sc, base = _base(scenario, overrides)
    rows = []
    for device in devices:
        for frame in frame_sizes:
            doc = _with_device(copy.deepcopy(base), device)
            for entry in doc.get("traffic") or []:
                if entry.get("kind") in _UDP:
                    entry["frame_size"] = f"{frame}B"
            trial = from_dict(doc)
            interval = int(trial.stats.throughput_interval)
            if interval <= 0:
                raise ScenarioError([("stats.throughput_interval", "forwarding needs throughput bins: must be > 0")],
                                    sc.source)
            result = run(trial)
            duration = int(trial.duration)
            start = -(-int(duration * warmup) // interval) * interval
            end = duration // interval * interval
            if end <= start:
                raise ScenarioError([("duration", f"too short for one stats.throughput_interval bin after the "
                                                  f"warm-up ({warmup:.0%} of the duration)")], sc.source)
            window_s = (end - start) * 1e-12
            line = _line_pps(result, frame, int(trial.network.ethernet_overhead))
            flows = result.flows.filter(pl.col("kind").is_in(list(_UDP)))
            got = (
                result.throughput.filter((pl.col("time_ps") >= start) & (pl.col("time_ps") < end))
                .group_by("flow_id").agg(pl.col("bytes").sum())
            )
            delivered = dict(zip(got["flow_id"].to_list(), got["bytes"].to_list()))
            pct = []
            offered_total = delivered_total = 0.0
            for flow_id, src in zip(flows["flow_id"].to_list(), flows["src"].to_list()):
                pps = delivered.get(flow_id, 0) / frame / window_s
                pct.append(100 * pps / line[src])
                delivered_total += pps
                offered_total += line[src]
            weights = flows["packets_delivered"].cast(pl.Float64)
            mean = (flows["latency_mean_ps"].fill_nan(0) * weights).sum() / max(weights.sum(), 1)
            drops = result.drops
            rows.append(
                {
                    "device": _device_name(trial, device),
                    "frame_bytes": frame,
                    "flows": flows.height,
                    "throughput_pct": 100 * delivered_total / offered_total if offered_total else 0.0,
                    "throughput_min_pct": min(pct) if pct else 0.0,
                    "latency_min_ns": (flows["latency_min_ps"].min() or 0) / 1e3,
                    "latency_mean_ns": mean / 1e3,
                    "latency_max_ns": (flows["latency_max_ps"].max() or 0) / 1e3,
                    "packets_dropped": int(result.summary["packets_dropped"]),
                    "pipeline_queue_drops": int(
                        drops.filter(pl.col("reason") == "pipeline_queue_full")["packets"].sum() if drops.height else 0
                    ),
                }
            )
    return pl.DataFrame(rows)


def _hosts(sc: Scenario) -> list[str]:
    """Host names of the scenario's topology (star, dumbbell, ... or explicit)."""
    topo = sc.topology
    if topo.kind == "explicit":
        return [n.name for n in topo.nodes if n.kind == "host"]
    if topo.kind == "star":
        return [f"h{i}" for i in range(topo.hosts)]
    raise ScenarioError([("topology.kind", f"fairness draws sources from a star or explicit topology (got {topo.kind!r})")],
                        sc.source)


def fairness(
    scenario: Union[Scenario, str, "os.PathLike[str]"],
    sources: Sequence[int] = FAIRNESS_SOURCES,
    frame_sizes: Sequence[int] = FAIRNESS_FRAME_SIZES,
    devices: Sequence[Optional[str]] = (None,),
    seed: int = 1,
    overrides: Sequence[str] = (),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-source shares of one output port under fan-in.

    The scenario's traffic entries (all to one ``dst``) are the template each
    source runs. Returns ``(shares, summary)``: ``shares`` has ``device``,
    ``sources``, ``frame_bytes``, ``src``, ``group`` (the source's input
    group at the egress port, when the device arbitrates by groups),
    ``share`` and ``expected_share``; ``summary`` has per (device, sources,
    frame size) ``share_min``, ``share_max``, ``jain``, ``expected_jain``,
    ``max_error`` (largest |share - expected|) and the ``source_hosts``.

    Raises :class:`~fabricsim.errors.ScenarioError` naming ``sources`` (each
    from 2 to the number of hosts other than the destination) or
    ``frame_sizes[i]`` (64 to 65,535 B).
    """
    sc, base = _base(scenario, overrides)
    template = base.get("traffic") or []
    dsts = {entry.get("dst") for entry in template}
    if len(dsts) != 1:
        raise ScenarioError([("traffic", "fairness needs traffic entries that all send to one dst")], sc.source)
    dst = dsts.pop()
    candidates = [h for h in _hosts(sc) if h != dst]
    # Fan-in needs two sources at least (one has the whole port: no share to compare).
    for n in sources:
        if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= len(candidates):
            allowed = (f"from 2 to {len(candidates)} (the hosts other than the destination {dst})"
                       if len(candidates) >= 2 else f"at least 2, and the topology has {len(candidates)} other hosts")
            raise ScenarioError([("sources", f"must be {allowed} (got {n!r})")], sc.source)
    for i, frame in enumerate(frame_sizes):
        if isinstance(frame, bool) or not isinstance(frame, int) or not 64 <= frame <= 65535:
            raise ScenarioError([(f"frame_sizes[{i}]", f"must be from 64 to 65,535 bytes (got {frame!r})")], sc.source)
    share_rows: list[dict[str, Any]] = []
    summary_rows: list[dict[str, Any]] = []
    for n in sources:
        draw = random.Random(f"{seed}:{n}")
        chosen = sorted(draw.sample(candidates, n), key=candidates.index)
        for device in devices:
            for frame in frame_sizes:
                doc = _with_device(copy.deepcopy(base), device)
                doc["traffic"] = [{**entry, "src": list(chosen), "frame_size": f"{frame}B"} for entry in template]
                trial = from_dict(doc)
                result = run(trial)
                shares = result.source_shares.filter(pl.col("dst") == dst)
                got = dict(zip(shares["src"].to_list(), shares["share"].to_list()))
                groups = _input_groups(trial, result, dst)
                demand = [1.0] * n
                if groups:
                    expected = hierarchical_shares(demand, [groups.get(h, -1) for h in chosen], 1.0)
                else:
                    expected = [1.0 / n] * n
                values = [got.get(h, 0.0) for h in chosen]
                for h, v, e in zip(chosen, values, expected):
                    share_rows.append(
                        {
                            "device": _device_name(trial, device),
                            "sources": n,
                            "frame_bytes": frame,
                            "src": h,
                            "group": groups.get(h),
                            "share": v,
                            "expected_share": e,
                        }
                    )
                summary_rows.append(
                    {
                        "device": _device_name(trial, device),
                        "sources": n,
                        "frame_bytes": frame,
                        "share_min": min(values),
                        "share_max": max(values),
                        "jain": _jain(values),
                        "expected_jain": _jain(expected),
                        "max_error": max(abs(v - e) for v, e in zip(values, expected)),
                        "source_hosts": " ".join(chosen),
                    }
                )
    return pl.DataFrame(share_rows), pl.DataFrame(summary_rows)


def _jain(x: Sequence[float]) -> float:
    from fabricsim.outputs.shares import jain

    return jain(list(x))


def _input_groups(trial: Scenario, result: Any, dst: str) -> dict[str, int]:
    """Input group of each host at the switch that delivers to ``dst``, by the
    switch's arbitration (empty for ``fifo``): ``port_group``, ``groups`` equal
    blocks, or the pipeline's pipes (equal blocks, or ``port_pipe``)."""
    links = result.links
    toward = links.filter(pl.col("dst") == dst)
    if toward.height == 0:
        return {}
    switch = toward["src"][0]
    spec = trial.network.switch_overrides.get(switch, trial.network.switch)
    arb = spec.arbitration
    if arb.kind == "fifo":
        return {}
    into = links.filter(pl.col("dst") == switch)
    ports = links.filter(pl.col("src") == switch).height

    def blocks(n: int) -> list[int]:
        n = min(n, ports)
        return [p * n // ports for p in range(ports)]

    if arb.kind == "round_robin":
        group = [0] * ports
    elif arb.port_group is not None:
        group = list(arb.port_group)
    elif arb.groups is not None:
        group = blocks(arb.groups)
    elif spec.pipeline is not None and spec.pipeline.port_pipe is not None:
        group = list(spec.pipeline.port_pipe)
    elif spec.pipeline is not None:
        group = blocks(spec.pipeline.pipes)
    else:
        return {}
    return {src: group[p] for src, p in zip(into["src"].to_list(), into["dst_port"].to_list()) if p < len(group)}
