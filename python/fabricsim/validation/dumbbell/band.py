"""The twin against the recorded grid (:data:`~fabricsim.validation.dumbbell.setup.GRID_RESULTS`):
per point, the twin/kernel ratios of goodput, bottleneck drops, mean queue and
recoveries and the difference of Jain's index, and whether each is in its band
(:data:`BAND`). A point outside is listed with the measured reason where one
holds: the lab did not repeat itself there (its own runs differ by more than
the band), or, for drops, packet captures of the point in the lab
(:data:`EPISODES`) show the kernel losing more segments per loss episode
than the twin while the episodes agree, or the same point recorded on a host
under another load (the loaded and the quiet grid) or recorded again
(:data:`REPEAT_GRID_RESULTS`) is in its band while the kernel's recordings
differ by more than it (:func:`other_recording_reasons`, :data:`OTHER_RECORDINGS`)."""

from __future__ import annotations

import json
import multiprocessing
import statistics
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from fabricsim.validation.dumbbell.analysis import _bfifo_mean_bytes, kernel_recoveries, summary_drops
from fabricsim.validation.dumbbell.setup import (
    GRID_RESULTS,
    QUIET_GRID_RESULTS,
    REPEAT_GRID_RESULTS,
    RESULTS,
    DumbbellSetup,
    jain_index,
)
from fabricsim.validation.dumbbell.twin import simulate_recorded

#: The bands: total goodput within 5 %; bottleneck drops and mean queue within
#: 0.7-1.43x of the kernel's mean; Jain's index within 0.05.
BAND: dict[str, Any] = {"goodput": 0.05, "drops": (0.7, 1.43), "mean_queue": (0.7, 1.43), "jain": 0.05}
#: Below this many drops per run (kernel and twin both) a ratio of drops says nothing.
FEW_DROPS = 20
#: Below one frame of mean queue (MTU 9000) a ratio of queues says nothing.
SMALL_QUEUE_BYTES = 9_018
#: Each stored recording and the other recordings of the same points its misses are also
#: judged against (:func:`other_recording_reasons`), in that order, each with the reason's
#: kind and how it names the other recording: the loaded and the quiet grid under each
#: other's host load, and the repeat of their unexplained points (2026-12-06) against both.
OTHER_RECORDINGS: dict[Path, tuple[tuple[Path, str, str], ...]] = {
    GRID_RESULTS: ((QUIET_GRID_RESULTS, "host load", "the quiet host"),
                   (REPEAT_GRID_RESULTS, "recorded again", "a quiet host on 2026-12-06")),
    QUIET_GRID_RESULTS: ((GRID_RESULTS, "host load", "the loaded host"),
                         (REPEAT_GRID_RESULTS, "recorded again", "a quiet host on 2026-12-06")),
    REPEAT_GRID_RESULTS: ((QUIET_GRID_RESULTS, "recorded again", "the quiet host on 2026-12-04"),
                          (GRID_RESULTS, "recorded again", "the loaded host on 2026-12-01")),
}
#: Grid points re-run in the lab with packet captures on both sides of the
#: bottleneck and the sender's tcp_probe tracepoint: per run, the loss episodes
#: and the drops in each (docs/validation/linux.md, "What misses, measured").
EPISODES = RESULTS.with_name("dumbbell-grid-episodes.json")


def captured_episodes() -> dict[str, list[dict[str, Any]]]:
    """Per captured grid point, the per-run summaries of :data:`EPISODES`."""
    return dict(json.loads(EPISODES.read_text())["points"]) if EPISODES.exists() else {}


def _per_episode_reason(point: "GridPoint", captures: dict[str, list[dict[str, Any]]]) -> Optional[str]:
    """The measured reason for a drops miss, where the point was captured: the
    kernel's drops per loss episode in the captures against the twin's drops
    per recovery, with the recoveries in the drops band and the drops in it
    once each side is scaled to one drop per episode."""
    runs = captures.get(point.name)
    if not runs or not point.twin.get("recoveries") or not point.kernel.get("recoveries"):
        return None
    kernel = sum(r["drops_captured"] for r in runs) / sum(r["episodes"] for r in runs)
    twin = point.twin["drops"] / point.twin["recoveries"]
    low, high = BAND["drops"]
    if not low <= point.ratio("recoveries") <= high or not low <= point.ratio("drops") * kernel / twin <= high:
        return None
    second = sum(r["second_on_a_cwnd_increase"] for r in runs) / sum(r["two_drops"] for r in runs)
    return (
        f"captured: the kernel lost {kernel:.2f} segments per loss episode, the twin {twin:.2f}; "
        f"{second:.0%} of the kernel's second drops came on the next cwnd increase before the loss was detected"
    )


@dataclass
class GridPoint:
    """One recorded grid point and its twin (seed ``seed``)."""

    name: str
    setup: dict[str, Any]
    kernel: dict[str, float]
    twin: dict[str, float]
    #: The kernel's own runs: the largest ratio between two runs, per metric
    #: (for Jain's index the largest difference).
    kernel_spread: dict[str, float]
    seed: int = 1
    #: Metrics outside their band.
    misses: list[str] = field(default_factory=list)
    #: Per missed metric, the measured reason where one holds (the lab's own runs differ more).
    reasons: dict[str, str] = field(default_factory=dict)

    def ratio(self, metric: str) -> float:
        k, t = self.kernel[metric], self.twin[metric]
        return t / k if k else (1.0 if t == k else float("inf"))

    @property
    def in_band(self) -> bool:
        return not self.misses

    @property
    def unexplained(self) -> list[str]:
        """The metrics that miss without a measured reason."""
        return [m for m in self.misses if m not in self.reasons]

    @property
    def explained(self) -> bool:
        """Outside the band, with a measured reason for every metric that misses."""
        return bool(self.misses) and not self.unexplained

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kernel": self.kernel,
            "twin": self.twin,
            "kernel_spread": self.kernel_spread,
            "misses": self.misses,
            "reasons": self.reasons,
        }


def _kernel(record: dict[str, Any]) -> dict[str, float]:
    runs = record["runs"]
    return {
        "goodput": float(record["summary"]["total_goodput_bps"]["mean"]),
        "drops": summary_drops(record),
        "mean_queue": statistics.fmean(_bfifo_mean_bytes(r) for r in runs),
        "recoveries": kernel_recoveries(record),
        "jain": statistics.fmean(jain_index([f["goodput_bps"] for f in r["flows"]]) for r in runs),
    }


def _spread(record: dict[str, Any]) -> dict[str, float]:
    """How far apart the kernel's own runs are: the largest over smallest, per metric."""
    per_run = {
        "drops": [float(r["bottleneck"]["drops"]) for r in record["runs"]],
        "mean_queue": [_bfifo_mean_bytes(r) for r in record["runs"]],
        "goodput": [float(r["total_goodput_bps"]) for r in record["runs"]],
    }
    out = {}
    for metric, values in per_run.items():
        low, high = min(values), max(values)
        out[metric] = high / low if low > 0 else (1.0 if high == low else float("inf"))
    # Jain's index is judged by difference: its spread is the largest minus the smallest.
    jains = [jain_index([f["goodput_bps"] for f in r["flows"]]) for r in record["runs"]]
    out["jain"] = max(jains) - min(jains)
    return out


def _differ(value: float, reference: float, metric: str) -> bool:
    """Whether ``value`` is outside ``metric``'s band around ``reference`` (too few
    drops or too short a queue on both sides: never)."""
    if metric == "jain":
        return abs(value - reference) > BAND["jain"]
    ratio = value / reference if reference else (1.0 if value == reference else float("inf"))
    if metric == "goodput":
        return abs(ratio - 1.0) > BAND["goodput"]
    floor = FEW_DROPS if metric == "drops" else SMALL_QUEUE_BYTES
    if max(value, reference) < floor:
        return False
    low, high = BAND[metric]
    return not low <= ratio <= high


def _outside(point: GridPoint, metric: str) -> bool:
    """Whether the twin's ``metric`` leaves its band around the kernel's."""
    return _differ(point.twin[metric], point.kernel[metric], metric)


def _lab_spread_exceeds(point: GridPoint, metric: str) -> bool:
    """Whether the kernel's own runs differ by more than ``metric``'s band."""
    spread = point.kernel_spread.get(metric, 0.0)
    band = BAND[metric]
    if metric == "jain":
        return spread > band
    return spread > (1.0 + band if metric == "goodput" else band[1])


def judge(point: GridPoint, captures: Optional[dict[str, list[dict[str, Any]]]] = None) -> GridPoint:
    """Fills ``misses`` (metrics outside :data:`BAND`) and ``reasons`` (measured
    ones, per miss); ``captures``: :func:`captured_episodes` by default."""
    point.misses = [m for m in ("goodput", "drops", "mean_queue", "jain") if _outside(point, m)]
    point.reasons = {}
    captures = captured_episodes() if captures is None else captures
    for metric in point.misses:
        reason = _per_episode_reason(point, captures) if metric == "drops" else None
        if reason:
            point.reasons[metric] = reason
        elif _lab_spread_exceeds(point, metric):
            spread = point.kernel_spread[metric]
            point.reasons[metric] = (
                f"the lab's runs differ by {spread:.2f}" if metric == "jain" else f"the lab's runs differ {spread:.2f}x"
            )
    return point


def other_recording_reasons(points: Sequence[GridPoint], other: Sequence[GridPoint], kind: str,
                            where: str) -> list[GridPoint]:
    """Adds a measured reason (``kind: the kernel on <where> gives ...``) to each
    unexplained miss of ``points`` where the same point in ``other``, a recording
    of it under another host load (``kind`` "host load") or at another time
    ("recorded again"), judged against its own twin, is in the band for that
    metric while the two kernels differ from each other by more than the band:
    the kernel does not repeat itself there by the band, and the twin matches
    the other recording."""
    by_name = {p.name: p for p in other}
    for point in points:
        twin = by_name.get(point.name)
        if twin is None:
            continue
        for metric in point.unexplained:
            a, b = point.kernel[metric], twin.kernel[metric]
            if metric not in twin.misses and _differ(a, b, metric):
                shown = f"{b:.3f} against {a:.3f}" if metric == "jain" else f"{b / a:.2f}x of this one"
                point.reasons[metric] = f"{kind}: the kernel on {where} gives {shown}, in the band there"
    return list(points)


def judge_recordings(paths: Sequence[Path], seed: int = 1, workers: int = 1, shaped_router: bool = False,
                     select: Optional[Callable[[Path], Sequence[dict[str, Any]]]] = None) -> dict[Path, list[GridPoint]]:
    """Every recording of ``paths`` judged against its twin, its misses also judged
    against the stored :data:`OTHER_RECORDINGS` of the same points; ``select``: the
    records of a path (default: all of them)."""
    from fabricsim.validation.dumbbell.setup import recorded

    select = select or recorded
    wanted = set(paths) | {other for path in paths for other, _, _ in OTHER_RECORDINGS.get(path, ())}
    points = {path: grid_points(select(path), seed=seed, workers=workers, shaped_router=shaped_router)
              for path in wanted if path.exists()}
    for path in paths:
        for other, kind, where in OTHER_RECORDINGS.get(path, ()):
            if other in points:
                other_recording_reasons(points[path], points[other], kind, where)
    return {path: points[path] for path in paths}


def grid_point(record: dict[str, Any], seed: int = 1, shaped_router: bool = False) -> GridPoint:
    """The twin of one recorded grid point (the lab twin as it ran: :func:`simulate_recorded`;
    ``shaped_router``: its bottleneck built as the lab builds it, an htb class on a veth)."""
    sim = simulate_recorded(record, seed=seed, shaped_router=shaped_router)
    if not sim["conservation_ok"]:
        raise AssertionError(f"{record['name']}: the twin's conservation check failed")
    twin = {
        "goodput": float(sim["total_goodput_bps"]),
        "drops": float(sim["drops"]),
        "mean_queue": float(sim["mean_queue_bytes"]),
        "recoveries": float(sim["recoveries"]),
        "jain": float(sim["jain_index"]),
    }
    point = GridPoint(record["name"], record["setup"], _kernel(record), twin, _spread(record), seed)
    return judge(point)


def _point_job(job: tuple[dict[str, Any], int, bool]) -> GridPoint:
    return grid_point(*job)


def grid_points(records: Sequence[dict[str, Any]], seed: int = 1, workers: int = 1,
                shaped_router: bool = False) -> list[GridPoint]:
    """:func:`grid_point` of every record, in the records' order (``workers`` processes)."""
    jobs = [(record, seed, shaped_router) for record in records]
    if workers <= 1 or len(jobs) <= 1:
        return [_point_job(job) for job in jobs]
    # Fresh interpreters: a process that has run simulations holds the core's
    # threads, which a fork would copy mid-lock.
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_point_job, jobs))


def _cell(point: GridPoint, metric: str) -> str:
    reason = point.reasons.get(metric, "")
    marks = (("captured", " (captured)"), ("host load", " (load)"), ("recorded again", " (again)"))
    mark = "" if metric not in point.misses else (
        " **x**" if not reason else next((m for start, m in marks if reason.startswith(start)), " (lab)"))
    if metric == "jain":
        return f"{point.twin['jain'] - point.kernel['jain']:+.3f}{mark}"
    if metric == "drops" and max(point.kernel["drops"], point.twin["drops"]) < FEW_DROPS:
        return f"{point.twin['drops']:.0f} / {point.kernel['drops']:.0f}"
    if metric == "mean_queue" and max(point.kernel["mean_queue"], point.twin["mean_queue"]) < SMALL_QUEUE_BYTES:
        return f"{point.twin['mean_queue'] / 1e3:.1f} / {point.kernel['mean_queue'] / 1e3:.1f} KB"
    ratio = point.ratio(metric)
    return f"{ratio:.2f}{mark}"


def band_markdown(points: Sequence[GridPoint]) -> str:
    """The grid as a Markdown table of twin/kernel ratios (drops and queues too
    small for a ratio as twin / kernel values; Jain's index as twin - kernel);
    **x** marks a miss, (lab) a miss where the lab's own runs differ more,
    (captured) a drops miss that the point's lab captures account for, (load)
    one that the point recorded under another host load is in the band for,
    (again) one that a recording of the point at another time is in the band for."""
    lines = [
        "| rate | senders | cc | bfifo | kernel drops | goodput | drops | mean queue | recoveries | Jain | lab spread (drops) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in points:
        s = DumbbellSetup(**p.setup)
        lines.append(
            f"| {s.rate} | {s.senders} | {s.cc} | {s.buffer} | {p.kernel['drops']:.0f} | {_cell(p, 'goodput')} | "
            f"{_cell(p, 'drops')} | {_cell(p, 'mean_queue')} | {p.ratio('recoveries'):.2f} | {_cell(p, 'jain')} | "
            f"{p.kernel_spread['drops']:.2f} |"
        )
    inside = sum(p.in_band for p in points)
    explained = sum(p.explained for p in points)
    lines.append("")
    lines.append(
        f"{inside} of {len(points)} points in every band; {explained} outside with a measured reason; "
        f"{len(points) - inside - explained} outside without one."
    )
    return "\n".join(lines)


def summary(points: Sequence[GridPoint]) -> dict[str, Optional[int]]:
    """How many points are in band, explained, and neither."""
    inside = sum(p.in_band for p in points)
    explained = sum(p.explained for p in points)
    return {"points": len(points), "in_band": inside, "explained": explained, "unexplained": len(points) - inside - explained}
