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

from fabricsim.errors import ScenarioError
from fabricsim.runner import run
from fabricsim.schema import Scenario, from_dict, load
from fabricsim.schema.topology import MAX_PORTS

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
    trial = _trial(base, device, ports, frame, frames)
    try:
        result = run(trial)
    except ScenarioError as exc:
        # The senders are the scenario's hosts h1..h{ports}: one it lacks is the ports' problem.
        missing = [issue.message for issue in exc.issues if issue.path.startswith(("traffic[0].src", "traffic[0].dst"))]
        if missing:
            raise ScenarioError([("ports", f"{ports} senders need hosts h0 to h{ports}: {missing[0]}")],
                                exc.source) from None
        raise
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

    Raises :class:`~fabricsim.errors.ScenarioError` naming ``ports`` (1 to
    65,533 for a star, which grows to ``ports + 1`` hosts; hosts ``h0`` to
    ``h{ports}`` in another topology) or ``frame_sizes[i]`` (64 to 65,535 B).
    """
    sc = scenario if isinstance(scenario, Scenario) else load(scenario, overrides)
    # A star grows to ports + 1 hosts (h0 receives); other topologies must have h0..h{ports}.
    most = MAX_PORTS - 1 if sc.topology.kind == "star" else None
    if isinstance(ports, bool) or not isinstance(ports, int) or ports < 1 or (most is not None and ports > most):
        allowed = f"from 1 to {most:,} (a star has at most {MAX_PORTS:,} hosts)" if most is not None else ">= 1"
        raise ScenarioError([("ports", f"must be {allowed} (got {ports!r})")], sc.source)
    for i, frame in enumerate(frame_sizes):
        if isinstance(frame, bool) or not isinstance(frame, int) or not 64 <= frame <= 65535:
            raise ScenarioError([(f"frame_sizes[{i}]", f"must be from 64 to 65,535 bytes (got {frame!r})")], sc.source)
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
