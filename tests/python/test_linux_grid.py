"""The TCP twin over the recorded grid of real-Linux dumbbells (no root: the
recordings are stored): every point in its band (goodput within 5 %, drops and
mean queue within 0.7-1.43x of the kernel's mean, Jain's index within 0.05),
outside it only where the lab's own runs differ by more than the band, where
packet captures of the point account for its drops, where the same point
recorded under the other host load is in the band (the loaded and the quiet
grid), where a recording of the same point at another time is in the band (the
repeat of the unexplained points), or among the misses listed below with what was measured there
(docs/validation/linux.md, "The grid" and "The grid on a quiet host")."""

from __future__ import annotations

import pytest

from fabricsim.validation.dumbbell import (
    GRID_RESULTS,
    QUIET_GRID_RESULTS,
    REPEAT_GRID_RESULTS,
    cpu_busy_shares,
    grid_setups,
    recorded,
)
from fabricsim.validation.dumbbell.band import (
    BAND,
    GridPoint,
    band_markdown,
    judge,
    judge_recordings,
    other_recording_reasons,
)

#: Grid points outside a band with no measured reason (no lab spread, no
#: capture, not in the band under the other host load): the metrics that miss.
#: A point that leaves a band, or comes back into it, fails the test until this
#: list says so. Five of the seven are single flows: the 479 KB single flows lose
#: only their slow-start overshoot (65-146 drops), which moves 1.2-1.4x between
#: the kernel's own two runs; on the 30 KB bfifo the twin's path holds a segment
#: more than the kernel's (docs/validation/linux.md, "How the kernel's single
#: flows begin a loss episode"). The other two are Jain's index of eight Reno
#: flows on the deepest bfifos at 100 and 300 Mbps (docs/validation/linux.md, "The grid").
KNOWN_MISSES: dict[str, tuple[str, ...]] = {
    "reno-1x1-100Mbps-479KB-10s-mtu9000-unpaced": ('drops',),
    "reno-8x1-100Mbps-958KB-10s-mtu9000-unpaced": ('jain',),
    "cubic-1x1-300Mbps-30KB-10s-mtu9000-unpaced": ('drops',),
    "reno-8x1-300Mbps-3834KB-10s-mtu9000-unpaced": ('jain',),
    "reno-1x1-1Gbps-30KB-10s-mtu9000-unpaced": ('drops',),
    "reno-1x1-1Gbps-479KB-10s-mtu9000-unpaced": ('drops',),
    "cubic-1x1-1Gbps-30KB-10s-mtu9000-unpaced": ('drops',),
}
#: Grid points without a kept run: every run fell below 90 % of the bottleneck's rate.
NOT_RECORDED = {"reno-2x1-1Gbps-60KB-10s-mtu9000-unpaced"}

#: The same grid recorded on a quiet host (QUIET_GRID_RESULTS: every point, two runs each, the
#: lab's processes alone on the two CPUs, 9-44 % busy). Without the other work the kernel's single
#: flows lose more at the small bfifos (the twin 0.22-0.63x of its drops there) and its 2 to 8 flows
#: at 1 Gbps (and CUBIC pairs at 100-300 Mbps) split into a fast and a slow group, in both runs and
#: with different flows each time (Jain 0.88-0.94, the twin 0.97-1.0); five of these are in the
#: band on the loaded host. The misses that remain unexplained (docs/validation/linux.md, "The grid
#: on a quiet host").
QUIET_KNOWN_MISSES: dict[str, tuple[str, ...]] = {
    "reno-1x1-100Mbps-30KB-10s-mtu9000-unpaced": ('drops',),
    "reno-1x1-100Mbps-479KB-10s-mtu9000-unpaced": ('drops',),
    "reno-1x1-300Mbps-30KB-10s-mtu9000-unpaced": ('drops',),
    "cubic-1x1-300Mbps-30KB-10s-mtu9000-unpaced": ('drops',),
    "reno-4x1-300Mbps-120KB-10s-mtu9000-unpaced": ('jain',),
    "reno-4x1-300Mbps-1917KB-10s-mtu9000-unpaced": ('drops',),
    "cubic-8x1-300Mbps-3834KB-10s-mtu9000-unpaced": ('jain',),
    "cubic-1x1-1Gbps-30KB-10s-mtu9000-unpaced": ('drops',),
}

#: The sixteen points unexplained on either grid, recorded again on a quiet host (2026-12-06, three
#: runs each, CPUs busy 6-31 %). The kernel moved by more than the band at several of them
#: (reno-4x1-1Gbps-120KB: Jain's index 0.992 against the quiet grid's 0.941, where the twin is in the band)
#: and stayed put at the single flows on the small bfifos, where the twin drops 0.4-0.65x of it on
#: all three recordings. Its own misses without a measured reason:
REPEAT_KNOWN_MISSES: dict[str, tuple[str, ...]] = {
    "reno-1x1-100Mbps-30KB-10s-mtu9000-unpaced": ('drops',),
    "reno-1x1-100Mbps-479KB-10s-mtu9000-unpaced": ('drops',),
    "cubic-1x1-300Mbps-30KB-10s-mtu9000-unpaced": ('drops',),
    "reno-4x1-300Mbps-1917KB-10s-mtu9000-unpaced": ('drops',),
    "reno-1x1-1Gbps-30KB-10s-mtu9000-unpaced": ('drops',),
    "reno-1x1-1Gbps-479KB-10s-mtu9000-unpaced": ('drops',),
    "cubic-1x1-1Gbps-30KB-10s-mtu9000-unpaced": ('drops',),
}
#: The points of the repeat: the ones unexplained on either grid when it was recorded (2026-12-06).
REPEATED = {
    "cubic-1x1-100Mbps-120KB-10s-mtu9000-unpaced",
    "cubic-1x1-1Gbps-30KB-10s-mtu9000-unpaced",
    "cubic-1x1-300Mbps-30KB-10s-mtu9000-unpaced",
    "cubic-2x1-100Mbps-60KB-10s-mtu9000-unpaced",
    "cubic-2x1-1Gbps-60KB-10s-mtu9000-unpaced",
    "cubic-2x1-300Mbps-60KB-10s-mtu9000-unpaced",
    "cubic-4x1-300Mbps-120KB-10s-mtu9000-unpaced",
    "reno-1x1-100Mbps-30KB-10s-mtu9000-unpaced",
    "reno-1x1-100Mbps-479KB-10s-mtu9000-unpaced",
    "reno-1x1-1Gbps-120KB-10s-mtu9000-unpaced",
    "reno-1x1-1Gbps-30KB-10s-mtu9000-unpaced",
    "reno-1x1-1Gbps-479KB-10s-mtu9000-unpaced",
    "reno-1x1-300Mbps-30KB-10s-mtu9000-unpaced",
    "reno-4x1-1Gbps-120KB-10s-mtu9000-unpaced",
    "reno-4x1-300Mbps-1917KB-10s-mtu9000-unpaced",
    "reno-8x1-300Mbps-3834KB-10s-mtu9000-unpaced",
}

#: Each stored recording: its file, the points it holds, and its unexplained misses.
GRIDS = {
    "loaded": (GRID_RESULTS, {s.name for s in grid_setups()} - NOT_RECORDED, KNOWN_MISSES),
    "quiet": (QUIET_GRID_RESULTS, {s.name for s in grid_setups()}, QUIET_KNOWN_MISSES),
    "repeat": (REPEAT_GRID_RESULTS, REPEATED, REPEAT_KNOWN_MISSES),
}


def _records(grid: str = "loaded") -> list[dict]:
    path = GRIDS[grid][0]
    if not path.exists():
        pytest.fail(f"no grid recordings at {path}")
    return recorded(path)


@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_the_recorded_grid_is_the_whole_grid(grid: str) -> None:
    records = {r["name"]: r for r in _records(grid)}
    assert set(records) == GRIDS[grid][1]
    for record in records.values():
        env = record["environment"]
        assert env["sysctls"]["net.ipv4.tcp_rmem"] == "4096 131072 6291456"
        assert record["setup"]["unpaced"] and record["setup"]["mtu"] == 9000
        # Two runs each (three on the repeat), but on the loaded host for two single CUBIC flows at
        # 1 Gbps with one run above 90 % of the rate.
        runs = 3 if grid == "repeat" else 2
        assert len(record["runs"]) >= runs or (grid == "loaded" and record["name"].startswith("cubic-1x1-1Gbps")), \
            record["name"]
        assert all(run["softnet_drops"] == 0 for run in record["runs"]), record["name"]
        # The receivers' buffers were polled (the receive-window autotuning under test).
        assert all(run["receiver_sockets"] for run in record["runs"]), record["name"]


def test_the_quiet_grid_ran_on_a_quiet_host() -> None:
    """Every run of the quiet grid and of the repeat kept the two CPUs mostly idle (busy below half their time), where the
    loaded grid's 300 Mbps and 1 Gbps runs had them busy nearly all the time."""
    for grid, record in [("quiet", r) for r in _records("quiet")] + [("repeat", r) for r in _records("repeat")]:
        assert max(cpu_busy_shares(record)) < 0.5, record["name"]
        for run in record["runs"]:
            # The twin's latency is the probe with the CPUs kept awake; the idle-CPU probe is kept.
            assert run["latency_probe"] == "awake"
            if grid == "quiet":  # probed again awake; the repeat probed awake from the start
                assert run["one_way_latency_idle_us"]["observations"] > 0
                assert run["one_way_latency_us"]["percentiles_us"]["p50"] < run["one_way_latency_idle_us"]["percentiles_us"]["p50"]
    loaded = [share for record in _records("loaded") if record["setup"]["rate"] == "1Gbps"
              for share in cpu_busy_shares(record)]
    assert min(loaded) > 0.8


@pytest.fixture(scope="module")
def both_grids() -> dict[str, list[GridPoint]]:
    """Each stored recording's points, its misses also judged against the other host load's
    grid and the recordings of the same points at another time."""
    judged = judge_recordings([path for path, _, _ in GRIDS.values()], seed=1, workers=2)
    return {grid: judged[GRIDS[grid][0]] for grid in GRIDS}


@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_every_grid_point_is_in_its_band_or_listed(grid: str, both_grids: dict[str, list[GridPoint]]) -> None:
    points = both_grids[grid]
    misses = {p.name: tuple(p.unexplained) for p in points if p.unexplained}
    known = GRIDS[grid][2]
    assert misses == known, band_markdown([p for p in points if p.name in set(misses) ^ set(known)])
    assert all(p.twin["goodput"] > 0 for p in points)


def _point(kernel: dict, twin: dict, spread: dict) -> GridPoint:
    return judge(GridPoint("p", {}, kernel, twin, spread), captures={})


def test_the_band_judges_each_metric() -> None:
    kernel = {"goodput": 100e6, "drops": 1000.0, "mean_queue": 50_000.0, "recoveries": 500.0, "jain": 0.99}
    calm = {"goodput": 1.0, "drops": 1.1, "mean_queue": 1.1}
    assert _point(kernel, dict(kernel), calm).in_band
    low, high = BAND["drops"]
    assert _point(kernel, {**kernel, "drops": 1000.0 * high * 1.01}, calm).misses == ["drops"]
    assert _point(kernel, {**kernel, "drops": 1000.0 * low * 1.01}, calm).in_band
    assert _point(kernel, {**kernel, "mean_queue": 20_000.0}, calm).misses == ["mean_queue"]
    assert _point(kernel, {**kernel, "goodput": 94e6}, calm).misses == ["goodput"]
    assert _point(kernel, {**kernel, "jain": 0.93}, calm).misses == ["jain"]
    # A miss where the lab's own runs differ more than the band is explained, and only then.
    wild = _point(kernel, {**kernel, "drops": 2000.0}, {**calm, "drops": 1.6})
    unfair = _point(kernel, {**kernel, "jain": 0.80}, {**calm, "jain": 0.2})
    assert unfair.misses == ["jain"] and unfair.explained
    assert wild.misses == ["drops"] and wild.explained
    assert not _point(kernel, {**kernel, "drops": 2000.0}, calm).explained
    # Too few drops (or too short a queue) for a ratio: no judgement of that metric.
    few = {**kernel, "drops": 4.0, "mean_queue": 3_000.0}
    assert _point(few, {**few, "drops": 12.0, "mean_queue": 8_000.0}, calm).in_band


def test_a_drops_miss_counts_as_measured_where_captures_show_the_drops_per_episode() -> None:
    kernel = {"goodput": 100e6, "drops": 270.0, "mean_queue": 50_000.0, "recoveries": 135.0, "jain": 1.0}
    twin = {**kernel, "drops": 135.0, "recoveries": 132.0}
    calm = {"goodput": 1.0, "drops": 1.1, "mean_queue": 1.1}
    run = {"drops_captured": 256, "episodes": 134, "two_drops": 115, "second_on_a_cwnd_increase": 114}
    point = judge(GridPoint("p", {}, kernel, dict(twin), calm), captures={"p": [run]})
    assert point.misses == ["drops"] and point.explained
    assert point.reasons["drops"].startswith("captured: the kernel lost 1.91 segments per loss episode, the twin 1.02")
    # Without captures, or with episodes that do not agree, the miss stays unexplained.
    assert not judge(GridPoint("p", {}, kernel, dict(twin), calm), captures={}).explained
    fewer = {**twin, "recoveries": 80.0}
    assert not judge(GridPoint("p", {}, kernel, fewer, calm), captures={"p": [run]}).explained
    # Every captured point is a recorded grid point.
    from fabricsim.validation.dumbbell.band import captured_episodes

    names = {r["name"] for r in _records("loaded")}
    assert captured_episodes() and set(captured_episodes()) <= names


def test_a_miss_counts_as_measured_where_the_other_host_load_is_in_band_and_the_kernels_differ() -> None:
    calm = {"goodput": 1.0, "drops": 1.1, "mean_queue": 1.1, "jain": 0.0}
    loaded = {"goodput": 90e6, "drops": 1000.0, "mean_queue": 50_000.0, "recoveries": 500.0, "jain": 1.0}
    quiet = {**loaded, "goodput": 99e6}
    twin = {**loaded, "goodput": 100e6}
    here = _point(loaded, dict(twin), calm)
    there = _point(quiet, dict(twin), calm)
    assert here.unexplained == ["goodput"] and there.in_band
    other_recording_reasons([here], [there], "host load", "the quiet host")
    assert here.explained and here.reasons["goodput"].startswith("host load: the kernel on the quiet host")
    # Kernels within the band of each other: the other load does not explain the miss.
    near = _point({**loaded, "goodput": 92e6}, {**twin, "goodput": 92e6}, calm)
    assert near.in_band
    again = _point(loaded, dict(twin), calm)
    assert other_recording_reasons([again], [near], "host load", "the quiet host")[0].unexplained == ["goodput"]
    # Nor does a recording that misses too.
    off = _point({**loaded, "goodput": 80e6}, dict(twin), calm)
    assert other_recording_reasons([_point(loaded, dict(twin), calm)], [off], "host load", "the quiet host")[0].unexplained == ["goodput"]


def test_a_miss_counts_as_measured_where_a_recording_at_another_time_is_in_band_and_the_kernels_differ() -> None:
    calm = {"goodput": 1.0, "drops": 1.1, "mean_queue": 1.1, "jain": 0.0}
    first = {"goodput": 100e6, "drops": 1000.0, "mean_queue": 50_000.0, "recoveries": 500.0, "jain": 1.0}
    twin = {**first, "drops": 1600.0}
    here = _point(first, dict(twin), calm)
    again = _point({**first, "drops": 1500.0}, dict(twin), calm)
    assert here.unexplained == ["drops"] and again.in_band
    other_recording_reasons([here], [again], "recorded again", "a quiet host on 2026-12-06")
    assert here.explained
    assert here.reasons["drops"] == ("recorded again: the kernel on a quiet host on 2026-12-06 gives 1.50x of this one, "
                                     "in the band there")
    assert "(again)" in band_markdown([GridPoint(here.name, {"senders": 1, "cc": "reno", "rate": "1Gbps",
                                                             "buffer": "30KB"}, here.kernel, here.twin,
                                                 {"drops": 1.0}, misses=here.misses, reasons=here.reasons)])
    # A repeat that agrees with the first recording (within the band) explains nothing.
    same = _point({**first, "drops": 1100.0}, {**twin, "drops": 1100.0}, calm)
    assert other_recording_reasons([_point(first, dict(twin), calm)], [same], "recorded again", "x")[0].unexplained == ["drops"]


def test_a_latency_probed_again_keeps_the_earlier_probe_and_resets_the_summary(monkeypatch) -> None:
    """``record --reprobe-latency`` (root in use; here with a stand-in lab): each run's
    earlier probe moves to ``one_way_latency_idle_us`` and the summary takes the new ones."""
    import copy

    from fabricsim.validation.dumbbell import measurement
    from fabricsim.validation.linux.parsers import LatencyRecord

    calls = []

    class FakeLab:
        def __init__(self, topology, nice=0):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def sockperf_pingpong(self, src, dst, message_bytes=64, duration_s=1.0, awake=False):
            calls.append(awake)
            p50 = 7.0 + len(calls)
            return LatencyRecord(64, "udp", 100, p50, 0.1, 5.0, 9.0, {"p50": p50}, 0)

    monkeypatch.setattr(measurement, "Lab", FakeLab)
    record = copy.deepcopy(next(r for r in _records("quiet") if r["name"].startswith("reno-1x1-1Gbps-30KB")))
    idle = [run.get("one_way_latency_idle_us", run["one_way_latency_us"]) for run in record["runs"]]
    measurement.reprobe_latency(record)
    assert calls == [True, True]
    assert [run["one_way_latency_idle_us"] for run in record["runs"]] == idle
    assert [run["latency_probe"] for run in record["runs"]] == ["awake", "awake"]
    assert record["summary"]["one_way_latency_us"]["mean"] == 8.5
    # Probed once more: the idle probe stays the first one.
    measurement.reprobe_latency(record)
    assert [run["one_way_latency_idle_us"] for run in record["runs"]] == idle
