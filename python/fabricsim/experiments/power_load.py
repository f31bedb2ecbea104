"""Device power at given offered loads (idle, 10%, 100% ...): the scenario run once per load.

For each load the scenario's unicast UDP entries (``udp_cbr``,
``udp_poisson`` with a ``dst``) are set to that fraction of their source NIC's
rate and every other entry (multicast, TCP, bursts) is left out; load 0 runs
the network with no traffic at all (idle). Every device with a ``power`` model gets one row per
load: its mean power over the run (``energy`` table) and, beside it, what the
power model gives when every port of the device transmits at that load with
the scenario's UDP frame size (``all_ports_w``, the "every station sends at
the load" figure of a power test with bidirectional station-to-station
traffic).
"""

from __future__ import annotations

import copy
import os
from typing import Any, Optional, Sequence, Union

import polars as pl

from fabricsim import units
from fabricsim.runner import run
from fabricsim.schema import Scenario, from_dict, load

__all__ = ["LOADS", "power_at_loads"]

LOADS = (0.0, 0.1, 1.0)
_UDP = ("udp_cbr", "udp_poisson")


def _at_load(doc: dict[str, Any], fraction: float) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    unicast = [t for t in out.get("traffic") or [] if t.get("kind") in _UDP and t.get("group") is None]
    out["traffic"] = [] if fraction == 0 else [{**t, "rate": units.format_percent(fraction)} for t in unicast]
    return out


def power_at_loads(
    scenario: Union[Scenario, str, "os.PathLike[str]"],
    loads: Sequence[float] = LOADS,
    devices: Sequence[Optional[str]] = (None,),
    overrides: Sequence[str] = (),
) -> pl.DataFrame:
    """One row per (device preset, load, powered node): ``mean_w``, ``energy_j``, ``seconds``,
    measured ``bits_per_s`` and ``frames_per_s`` forwarded, and ``all_ports_w``."""
    sc = scenario if isinstance(scenario, Scenario) else load(scenario, overrides)
    base = sc.source_data or sc.model_dump(mode="json", by_alias=True)
    rows = []
    for device in devices:
        doc = copy.deepcopy(base)
        if device is not None:
            network = dict(doc.get("network") or {})
            network["switch"] = {**(network.get("switch") or {}), "device": device}
            doc["network"] = network
        for fraction in loads:
            trial = from_dict(_at_load(doc, fraction))
            frames = {t.frame_size for t in from_dict(_at_load(doc, 1.0)).traffic}
            frame = frames.pop() if len(frames) == 1 else None
            result = run(trial)
            resolved = trial.to_resolved()
            overhead = resolved["network"]["ethernet_overhead_bytes"]
            nodes = result.nodes
            links = result.links
            for r in result.energy.iter_rows(named=True):
                out_links = links.filter(pl.col("src") == r["node"])
                line_bps = int(out_links["rate_bps"].sum())
                all_ports = None
                if frame is not None or fraction == 0:
                    f = frame or 1500
                    bits = fraction * line_bps * f / (f + overhead)
                    all_ports = (r["idle_w"] + r["ports"] * r["port_w"] + r["bit_pj"] * 1e-12 * bits
                                 + r["packet_nj"] * 1e-9 * bits / (8 * f))
                kind = nodes.filter(pl.col("name") == r["node"])["kind"].to_list()
                rows.append({
                    "device": device or sc.name,
                    "node": r["node"],
                    "kind": kind[0] if kind else None,
                    "load": fraction,
                    "ports": r["ports"],
                    "frame_bytes": frame,
                    "seconds": r["seconds"],
                    "energy_j": r["energy_j"],
                    "mean_w": r["mean_w"],
                    "bits_per_s": r["bytes"] * 8 / r["seconds"],
                    "frames_per_s": r["frames"] / r["seconds"],
                    "all_ports_w": all_ports,
                })
    return pl.DataFrame(rows)
