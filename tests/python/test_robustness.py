"""Runs that could hang, fail or be interrupted: paced TCP limited by its window,
the core's stall guard, Ctrl-C, panics in the core."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import fabricsim
from fabricsim import RunInterrupted, SimulationError, loads
from fabricsim.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

PACED = {
    # Pacing faster than the link: the window fills at once.
    "window_full": """
duration: 1ms
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
tcp: {pacing_rate: 20Gbps}
traffic: [{kind: tcp_bulk, src: h1, dst: h0, size: 100KB}]
""",
    # A long round trip: the window runs out in slow start, round after round.
    "long_rtt_slow_start": """
duration: 50ms
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1ms}}
tcp: {pacing_rate: 10Gbps}
traffic: [{kind: tcp_bulk, src: h1, dst: h0, size: 2MB}]
""",
    # A timed flow: its sending time ends with data in flight.
    "timed": """
duration: 2ms
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
tcp: {pacing_rate: 2Gbps}
traffic: [{kind: tcp_bulk, src: h1, dst: h0, duration: 1ms}]
""",
}


def fabricsim_cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "fabricsim", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


@pytest.mark.parametrize("case", sorted(PACED))
def test_paced_tcp_limited_by_its_window_completes(core, tmp_path, case):
    """A paced flow that becomes window-limited once froze simulated time (the
    pacing timer re-armed itself at a passed deadline): run in a subprocess
    with a time limit, so that a regression fails instead of hanging."""
    path = tmp_path / f"{case}.yaml"
    path.write_text(PACED[case])
    r = fabricsim_cli("run", str(path), "--out", str(tmp_path / "out"), "--no-progress")
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["flows_completed"] == summary["flows_total"] == 1
    assert summary["conservation_ok"] and summary["drained"]


def test_the_shipped_dumbbell_with_pacing_completes(core, tmp_path):
    r = fabricsim_cli(
        "run", "scenarios/dumbbell.yaml", "--set", "duration=1ms", "--set", "tcp.pacing_rate=2Gbps",
        "--out", str(tmp_path / "out"), "--no-progress",
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["flows_completed"] == 4 and summary["conservation_ok"]


INCAST = """
name: incast
duration: 1ms
topology: {kind: star, hosts: 41, link: {rate: 10Gbps, delay: 1us}}
traffic: [{kind: tcp_incast, client: h0, servers: [%s], response_size: 20KB}]
""" % ", ".join(f"h{i}" for i in range(1, 41))


def test_the_stall_guard_fails_the_run_naming_the_component(core):
    """A real stall no longer exists to show; a small limit makes the 40
    connections opening at t = 0 trip the guard the same way."""
    sim = core.Simulation(json.dumps(loads(INCAST).to_resolved()))
    assert sim.stall_limit >= 2**20
    sim.stall_limit = 20
    with pytest.raises(core.SimulationError, match=r"simulated time stopped advancing at 0 ps") as info:
        sim.run_until(10**9)
    assert "of the last" in str(info.value) and "TCP connection of flow" in str(info.value)
    sim.stop()
    out = sim.finish()
    assert out["summary"]["conservation_ok"] and out["summary"]["events"] == 19


def test_a_stalled_run_keeps_its_partial_results(core, tmp_path, monkeypatch, capsys):
    import fabricsim.runner as runner

    build = runner._build

    def small_limit(core_module, scenario, resolved):
        sim = build(core_module, scenario, resolved)
        sim.stall_limit = 20
        return sim

    monkeypatch.setattr(runner, "_build", small_limit)
    with pytest.raises(SimulationError, match="stopped advancing") as info:
        fabricsim.run(loads(INCAST))
    partial = info.value.result
    assert "stopped advancing" in partial.summary["error"] and partial.summary["conservation_ok"]
    path = tmp_path / "s.yaml"
    path.write_text(INCAST)
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 1
    assert "error: simulated time stopped advancing at 0 ps" in capsys.readouterr().err
    assert "stopped advancing" in json.loads((tmp_path / "out" / "summary.json").read_text())["error"]


LONG = """
name: long
duration: 10s
topology: {kind: star, hosts: 9, link: {rate: 100Gbps, delay: 1us}}
traffic: [{kind: udp_cbr, src: [h1, h2, h3, h4, h5, h6, h7, h8], dst: h0, rate: 50%}]
"""


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT to itself")
def test_ctrl_c_stops_a_run_and_keeps_its_results(core):
    """Ctrl-C raises within a fraction of a second even while the core runs a
    long stretch of simulated time, and the results so far are kept."""
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    # Python's own Ctrl-C handler, whatever was in place (SIGINT is ignored in a
    # background job of a non-interactive shell, and Python then leaves it so).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, interrupt)
    timer.start()
    try:
        with pytest.raises(RunInterrupted) as info:
            fabricsim.run(loads(LONG))
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    stopped = time.perf_counter()
    result = info.value.result
    assert isinstance(info.value, KeyboardInterrupt)
    assert result.summary["interrupted"] is True and result.summary["conservation_ok"]
    assert 0 < result.summary["sim_time_s"] < 10, "the run stopped early"
    # Far less than the run would take (minutes); generous for a loaded machine.
    assert stopped - sent[0] < 20


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_ctrl_c_on_the_command_line_writes_the_partial_results(core, tmp_path):
    path = tmp_path / "long.yaml"
    path.write_text(LONG)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fabricsim", "run", str(path), "--out", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C's default action in the child, even when this process was
        # started with SIGINT ignored (a background job of a non-interactive shell).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # Until the output directory is prepared (just before the run), then a little more.
    for _ in range(600):
        if out.exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().endswith("interrupted")
    assert json.loads((out / "summary.json").read_text())["interrupted"] is True
    # only the tables: drawing the page would keep the command running past a second
    assert not (out / "report.html").exists() and f"fabricsim report {out}" in err


def test_a_panic_in_the_core_reaches_python_as_simulation_error(core):
    with pytest.raises(core.SimulationError, match="internal error in the simulation core: boom"):
        core._panic_in_core("boom")
    # The interpreter is fine afterwards.
    assert core.Simulation(json.dumps(loads(INCAST).to_resolved())).end_ps == 10**9
