"""Burst absorption: the largest simultaneous line-rate burst a switch absorbs
without loss (RFC 2544 back-to-back / RFC 2889 many-to-one style).

``ports`` hosts (``h1..h{ports}``) each send ``n`` back-to-back frames of one
size at line rate, all starting at the same time, to ``h0`` through one switch.
For each frame size, :func:`burst_absorption` finds by bisection the largest
``n`` with no drop and reports the burst in frames and bytes (all senders
together). The scenario file supplies the topology, links and switch (or a
``device`` preset); its traffic is replaced.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union

import polars as pl

from fabricsim.runner import run
from fabricsim.schema import Scenario, from_dict, load

__all__ = ["FRAME_SIZES", "burst_absorption", "absorbs"]

FRAME_SIZES = (192, 512, 1024, 1518, 2048, 4096, 9216)
"""The burst-absorption test plan's frame sizes (bytes)."""


def _trial(base: dict[str, Any], device: Optional[str], ports: int, frame: int, frames: int) -> Scenario:
    doc = dict(base)
    network = dict(doc.get("network") or {})
    switch = dict(network.get("switch") or {})
    if device is not None:
        switch["device"] = device
    network["switch"] = switch
    doc["network"] = network
    # Long enough for any burst to be sent (sources stop at the duration); the
    # run ends once the network has drained. No periodic samples are needed.
    doc["duration"] = "10s"
    doc["stats"] = {**(doc.get("stats") or {}), "queue_sample_interval": "0s"}
    doc["traffic"] = [
        {
            "kind": "burst",
            "name": "burst",
            "src": [f"h{i}" for i in range(1, ports + 1)],
            "dst": "h0",
            "frames": frames,
            "frame_size": f"{frame}B",
        }
    ]
    return from_dict(doc)


def absorbs(base: dict[str, Any], device: Optional[str], ports: int, frame: int, frames: int) -> bool:
    """Whether bursts of ``frames`` frames per sender pass without loss."""
    result = run(_trial(base, device, ports, frame, frames))
    return int(result.summary["packets_dropped"]) == 0


def burst_absorption(
    scenario: Union[Scenario, str, "os.PathLike[str]"],
    device: Optional[str] = None,
    ports: int = 2,
    frame_sizes: Sequence[int] = FRAME_SIZES,
    max_frames: int = 1 << 20,
    overrides: Sequence[str] = (),
) -> pl.DataFrame:
    """Largest lossless burst per frame size.

    Columns: ``device``, ``ports``, ``frame_bytes``, ``frames_per_port`` (the
    largest lossless burst per sender; ``max_frames`` means no loss was found up
    to the cap), ``burst_bytes`` (all senders), ``capped`` and ``trials``.
    """
    if not 1 <= ports:
        raise ValueError("ports must be >= 1")
    sc = scenario if isinstance(scenario, Scenario) else load(scenario, overrides)
    base = sc.source_data or sc.model_dump(mode="json", by_alias=True)
    hosts = getattr(sc.topology, "hosts", None)
    if hosts is not None and hosts < ports + 1:
        base.setdefault("topology", {})["hosts"] = ports + 1
    rows = []
    for frame in frame_sizes:
        trials = 0
        lo, hi = 0, 1
        # Grow until a loss, then bisect between the last lossless and the first lossy size.
        while hi <= max_frames:
            trials += 1
            if not absorbs(base, device, ports, frame, hi):
                break
            lo, hi = hi, hi * 2
        capped = hi > max_frames
        if not capped:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                trials += 1
                if absorbs(base, device, ports, frame, mid):
                    lo = mid
                else:
                    hi = mid
        rows.append(
            {
                "device": device or (sc.network.switch.device or "scenario"),
                "ports": ports,
                "frame_bytes": frame,
                "frames_per_port": lo,
                "burst_bytes": lo * ports * frame,
                "capped": capped,
                "trials": trials,
            }
        )
    return pl.DataFrame(rows)
