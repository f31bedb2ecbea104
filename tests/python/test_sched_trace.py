"""The lab's scheduler trace: the parser on recorded text (no root), the live trace (root, tracefs),
and the twin's receiving application fed from traced wake-ups."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fabricsim.validation import linux_dumbbell, sched_trace

# Lines as tracefs writes them (`trace` file, events of SchedTrace; clock mono).
TRACE = """\
# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
          <idle>-0       [001] dNh4. 100.000000: sched_wakeup: comm=iperf3 pid=10 prio=120 target_cpu=001
          iperf3-10      [001] ..... 100.000250: sys_exit: NR 7 = 1
          iperf3-10      [001] d..2. 100.001000: sched_switch: prev_comm=iperf3 prev_pid=10 prev_prio=120 prev_state=R+ ==> next_comm=ksoftirqd/1 next_pid=22 next_prio=120
     ksoftirqd/1-22      [001] d.s4. 100.001200: sched_wakeup: comm=iperf3 pid=11 prio=120 target_cpu=000
          iperf3-10      [000] ..... 100.001500: sys_exit: NR 0 = 8192
          iperf3-10      [000] d..2. 100.002000: sched_switch: prev_comm=iperf3 prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 kworker/u8:2-25481      [000] d..3. 100.002500: sched_wakeup: comm=iperf3 pid=10 prio=120 target_cpu=000
          iperf3-11      [000] ..... 100.002600: sys_exit: NR 0 = 1448
          iperf3-10      [000] ..... 100.006500: sys_exit: NR 23 = 1
          iperf3-10      [000] ..... 100.006600: sys_exit: NR 0 = -11
"""


def test_wakeup_delays_and_preemption_waits_are_read_from_the_trace() -> None:
    waits = sched_trace.parse_trace(TRACE.splitlines())
    assert sorted(waits) == [10, 11]
    assert waits[10].wakeups == pytest.approx([250e-6, 4000e-6])
    assert waits[10].preemptions == pytest.approx([500e-6])
    # read() (NR 0) returned data once for each; EAGAIN-like results and other calls do not count.
    assert waits[10].data_reads == 1 and waits[11].data_reads == 1
    # pid 10 read data (returned 100.0015) and went to sleep at 100.002: its loop's tail, 500 us.
    assert waits[10].loop_tails == pytest.approx([500e-6]) and waits[11].loop_tails == []
    # pid 11 was woken by ksoftirqd at 100.0012 and ran at 100.0026.
    assert waits[11].wakeups == pytest.approx([1400e-6])
    # Limited to chosen pids (a pid never seen gets an empty record).
    only = sched_trace.parse_trace(TRACE.splitlines(), pids=[11, 99])
    assert sorted(only) == [11, 99] and only[99].wakeups == [] and only[11].wakeups == pytest.approx([1400e-6])


def test_a_process_waking_itself_or_an_unwatched_one_adds_nothing() -> None:
    lines = [
        "          iperf3-10      [001] ..... 5.000000: sched_wakeup: comm=iperf3 pid=10 prio=120 target_cpu=001",
        "          iperf3-10      [001] ..... 5.000100: sys_exit: NR 7 = 1",
        "          iperf3-12      [001] ..... 5.000200: sched_wakeup: comm=iperf3 pid=13 prio=120 target_cpu=001",
        "          iperf3-13      [001] ..... 5.000300: sys_exit: NR 7 = 1",
    ]
    waits = sched_trace.parse_trace(lines, pids=[10])
    assert waits[10].wakeups == [] and waits[10].preemptions == []


def test_quantile_points_follow_the_distribution() -> None:
    values = [float(i) for i in range(1000)]
    points = sched_trace.quantile_points(values)
    assert len(points) == sched_trace.QUANTILES
    assert points[0] == 5.0 and points[49] == 495.0 and points[-1] == 995.0
    assert sched_trace.quantile_points([]) == []
    assert sched_trace.quantile_points([3.0]) == [3.0] * sched_trace.QUANTILES
    summary = sched_trace.Waits(1, wakeups=[1e-6, 3e-6], preemptions=[]).summary()
    assert summary["wakeups"] == 2 and summary["wakeup_mean_ns"] == 2000
    assert summary["preemptions"] == 0 and summary["preemption_quantiles_ns"] == []
    assert set(summary["wakeup_quantiles_ns"]) == {1000, 3000}


def _record(traced: list[bool]) -> dict:
    readers = []
    for i, has in enumerate(traced):
        reader = {
            "pid": 100 + i,
            "syscalls": 1000,
            "bytes": 10_000_000,
            "runtime_ns": 20_000_000,
            "run_delay_ns": 50_000_000,
            "timeslices": 500,
            "voluntary_switches": 400,
            "wall_s": 1.0,
        }
        if has:
            reader["sched"] = {"wakeups": 400, "wakeup_quantiles_ns": [1000 * (i + 1)] * 50 + [9000 * (i + 1)] * 50}
        readers.append(reader)
    return {"runs": [{"readers": readers}]}


def test_the_twin_reader_draws_from_the_traced_wakeups_where_every_server_was_traced() -> None:
    app = linux_dumbbell.measured_receiver_app(_record([True, True]), traced=True)
    assert app is not None and app["wakeup"]["kind"] == "empirical"
    samples = app["wakeup"]["samples"]
    assert len(samples) == 200
    assert samples.count("1000ns") == 50 and samples.count("18000ns") == 50
    # The copy rate and read size come from /proc as before: 8 bits / (20 ms / 10 MB).
    assert app["copy_rate"] == "4000000000bps" and app["read_size"] == "131072B"
    # By default (the schedstat mean), or one server untraced: exponential with run_delay / pcount = 100 us.
    for app in (
        linux_dumbbell.measured_receiver_app(_record([True, True])),
        linux_dumbbell.measured_receiver_app(_record([True, False]), traced=True),
    ):
        assert app is not None and app["wakeup"] == {"kind": "exponential", "delay": "100000ns"}


def test_traced_wakeups_change_the_twin_and_stay_deterministic(core: object) -> None:
    """Same mean, different shape: a reader that usually runs at once but
    sometimes waits long holds more data unacknowledged per wake-up than an
    exponential one of the same mean, so the ACK cadence and the run differ;
    the same seed gives the same run."""
    setup = linux_dumbbell.DumbbellSetup(senders=2, duration_s=0.5)
    heavy = {"kind": "empirical", "samples": ["10us"] * 9 + ["3610us"]}  # mean 370 us
    light = {"kind": "exponential", "delay": "370us"}
    runs = {}
    for label, wakeup in (("heavy", heavy), ("light", light)):
        tcp = {"receiver_app": {"read_size": "131072B", "wakeup": wakeup, "copy_rate": "2Gbps"}}
        runs[label] = linux_dumbbell.simulate(setup, 10.0, seed=1, tcp=tcp)
        assert runs[label]["conservation_ok"]
        assert abs(runs[label]["mean_wakeup_delay_s"] - 370e-6) < 150e-6, label
    again = linux_dumbbell.simulate(
        setup, 10.0, seed=1, tcp={"receiver_app": {"read_size": "131072B", "wakeup": heavy, "copy_rate": "2Gbps"}}
    )
    assert again["drops"] == runs["heavy"]["drops"] and again["segments_per_ack"] == runs["heavy"]["segments_per_ack"]
    assert runs["heavy"]["segments_per_ack"] != runs["light"]["segments_per_ack"]


def test_recorded_runs_with_a_trace_carry_their_distributions() -> None:
    """Where the lab traced the scheduler, every iperf3 server and client has
    its wake-ups counted (about one per voluntary context switch), with quantile points."""
    traced = [
        r
        for path in (linux_dumbbell.RESULTS, linux_dumbbell.TRACED_RESULTS)
        for e in linux_dumbbell.recorded(path)
        for run in e["runs"]
        for r in run.get("readers", []) + run.get("writers", [])
        if r.get("sched")
    ]
    assert traced, "the traced recording ships with the package"
    for r in traced:
        sched = r["sched"]
        assert len(sched["wakeup_quantiles_ns"]) == sched_trace.QUANTILES
        assert sched["wakeup_quantiles_ns"] == sorted(sched["wakeup_quantiles_ns"])
        assert sched["overruns"] == 0
        assert 0.8 * r["voluntary_switches"] <= sched["wakeups"] <= 1.2 * r["voluntary_switches"] + 10


def _traceable() -> str | None:
    return sched_trace.available() or (None if shutil.which("sleep") else "no sleep(1)")


@pytest.mark.linux
@pytest.mark.skipif(_traceable() is not None, reason=_traceable() or "")
def test_live_trace_counts_the_wakeups_of_a_sleeping_process(tmp_path: Path) -> None:
    sleeper = tmp_path / "fs-sleeper"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", sleeper)
    pids = []
    with sched_trace.SchedTrace("fs-sleeper", buffer_kb=1024) as trace:
        for _ in range(10):
            process = subprocess.Popen([str(sleeper), "0.002"])
            process.wait()
            pids.append(process.pid)
    waits = trace.waits(pids)
    assert trace.overruns == 0
    # Each process slept once in nanosleep and was woken by its timer.
    woken = [w for w in waits.values() if w.wakeups]
    assert len(woken) >= 8
    assert all(0 <= d < 0.1 for w in woken for d in w.wakeups)
    # The tracing instance is gone.
    assert trace.name.startswith("fabricsim-")
    for root in (Path("/sys/kernel/tracing/instances"), Path("/sys/kernel/debug/tracing/instances")):
        if root.is_dir():
            assert not (root / trace.name).exists()


def test_preemptions_between_reads_come_from_the_trace() -> None:
    record = _record([True, True])
    for i, reader in enumerate(record["runs"][0]["readers"]):
        reader["sched"].update(
            data_reads=1000,
            preemptions=100 * (i + 1),
            preemption_quantiles_ns=[500_000 * (i + 1)] * 100,
            loop_tails=100 * (i + 1),
            loop_tail_mean_ns=10_000 * (i + 1),
        )
    app = linux_dumbbell.measured_receiver_app(record, traced=True, loop=True)
    assert app is not None
    # 300 preemptions over 2000 reads that returned data; the waits pooled from both servers.
    assert app["preemption"]["probability"] == pytest.approx(0.15)
    waits = app["preemption"]["wait"]
    assert waits["kind"] == "empirical" and sorted(set(waits["samples"])) == ["1000000ns", "500000ns"]
    # The loop's tail: the mean over all 300 sleeps, (100 x 10 us + 200 x 20 us) / 300.
    assert app["loop_time"] == "16667ns"
    untraced = linux_dumbbell.measured_receiver_app(record)
    assert "preemption" not in untraced and "loop_time" not in untraced
    assert "loop_time" not in linux_dumbbell.measured_receiver_app(record, traced=True)


def test_a_bad_preemption_names_the_field() -> None:
    from fabricsim.errors import ScenarioError
    from fabricsim.schema import from_dict

    scenario = linux_dumbbell.scenario(linux_dumbbell.DumbbellSetup(senders=2, duration_s=0.01), 10.0)
    scenario["tcp"] = dict(scenario.get("tcp") or {})
    scenario["tcp"]["receiver_app"] = {"preemption": {"probability": 1.5, "wait": {"kind": "constant", "delay": "1us"}}}
    with pytest.raises(ScenarioError, match=r"tcp\.receiver_app\.preemption\.probability"):
        from_dict(scenario)


def test_preemption_holds_data_unread_in_the_twin(core: object) -> None:
    """A reader that often waits for a CPU between reads leaves data unread
    longer: with a preemption after every read, each wait adds to the time
    between reads, so the twin reads less often and more per wake-up."""
    setup = linux_dumbbell.DumbbellSetup(senders=2, duration_s=0.3)
    base = {"read_size": "16KiB", "wakeup": {"kind": "constant", "delay": "50us"}, "copy_rate": "4Gbps"}
    plain = linux_dumbbell.simulate(setup, 10.0, seed=1, tcp={"receiver_app": base})
    preempted_app = dict(base, preemption={"probability": 1.0, "wait": {"kind": "constant", "delay": "300us"}})
    preempted = linux_dumbbell.simulate(setup, 10.0, seed=1, tcp={"receiver_app": preempted_app})
    assert plain["conservation_ok"] and preempted["conservation_ok"]
    assert preempted["reads_per_s"] < 0.8 * plain["reads_per_s"]
    assert preempted["segments_per_ack"] > plain["segments_per_ack"]


def test_a_reader_loop_takes_data_arriving_before_it_sleeps_without_a_wakeup(core: object) -> None:
    """With a loop time the process goes on reading what arrives before it
    would sleep: fewer wake-ups for the same bytes read."""
    setup = linux_dumbbell.DumbbellSetup(senders=2, duration_s=0.3)
    base = {"read_size": "128KiB", "wakeup": {"kind": "constant", "delay": "30us"}, "copy_rate": "4Gbps"}
    runs = {
        loop: linux_dumbbell.simulate(setup, 10.0, seed=1, tcp={"receiver_app": dict(base, loop_time=loop)})
        for loop in ("0us", "100us")
    }
    assert all(r["conservation_ok"] for r in runs.values())
    assert runs["100us"]["bytes_per_wakeup"] > 2 * runs["0us"]["bytes_per_wakeup"]
