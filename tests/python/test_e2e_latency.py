"""End-to-end latency and socket throughput through the host datapath model, against closed forms
computed from the host model's and the fabric's parameters alone (path_latency.end_to_end)."""

import subprocess
import sys
from pathlib import Path

import pytest

from fabricsim import from_dict
from fabricsim.experiments.path_latency import HOST_PARTS, host_terms
from fabricsim.experiments.rfc2544 import Settings, Stack, parse_stack, rfc2544
from fabricsim.schema import load

ROOT = Path(__file__).resolve().parents[2]
TOLLY = ROOT / "scenarios" / "tolly-latency.yaml"
PAIRS = [("s0", "s1"), ("f0", "f1")]
TRIAL = Settings(trial_ps=500_000_000, messages=5)


def test_unloaded_one_way_latency_per_component_equals_the_closed_form_to_the_picosecond(core):
    """UDP ping-pong through both fabrics with the kernel-bypass stack and the kernel stack, several
    frame sizes: every host part (stack, NIC DMA, interrupt wait, per end), the fabric's sum and the
    half round trip equal the closed form exactly."""
    out = rfc2544(TOLLY, tests=["host_latency"], frame_sizes=[64, 512, 1518, 9216], pairs=PAIRS,
                  stacks=["scenario", "linux-kernel"], settings=TRIAL)["host_latency"]
    assert out.height == 2 * 2 * 4
    assert sorted(set(out["stack"])) == ["linux-kernel udp", "scenario udp"]
    for row in out.iter_rows(named=True):
        assert row["messages"] == 5
        assert row["latency_ps"] == row["closed_form_ps"] == row["latency_min_ps"] == row["latency_max_ps"], row
        for part in HOST_PARTS:
            assert row[f"sim_{part}"] == row[part], (part, row)
        assert row["sim_fabric_ps"] == row["fabric_ps"], row
    # The kernel stack costs more than the bypass stack at every size, on both fabrics.
    by = {(r["device"], r["stack"], r["frame_bytes"]): r["latency_ps"] for r in out.iter_rows(named=True)}
    for (device, stack, frame), ps in by.items():
        if stack == "scenario udp":
            assert by[(device, "linux-kernel udp", frame)] > ps


def test_interrupt_coalescing_and_a_core_share_enter_the_closed_form_exactly(core):
    """A 5 us coalescing timer (every message waits for it) and a 50 % core share (CPU time doubles,
    rounded up once per batch) on the kernel stack."""
    doc = load(TOLLY).source_data
    doc["network"]["host"]["model"] = {"preset": "linux-kernel", "core_share": "50%",
                                       "interrupt": {"usecs": "5us", "frames": 0, "cost": "700ns"},
                                       "nic": {"tx_latency": "333ns", "tx_per_byte": "0.0777ns",
                                               "rx_latency": "250ns", "rx_per_byte": "0.1389ns"}}
    out = rfc2544(from_dict(doc), tests=["host_latency"], frame_sizes=[64, 1518], pairs=[("s0", "s1")],
                  settings=TRIAL)["host_latency"]
    for row in out.iter_rows(named=True):
        assert row["irq_wait_ps"] == row["sim_irq_wait_ps"] == 5_000_000
        assert row["latency_ps"] == row["closed_form_ps"], row
        assert row["sim_stack_rx_ps"] == row["stack_rx_ps"]


def test_host_terms_are_the_preset_costs_summed_by_hand():
    """The closed form's host parts for the kernel-bypass preset on the scenario's NIC, by hand:
    UDP 100 ns + 0.05 ns/B on transmit, 150 ns + 0.05 ns/B on receive; DMA 300/250 ns + 0.1389 ns/B."""
    model = load(TOLLY).to_resolved()["network"]["host"]["model"]
    exact, detail = host_terms(model, 1518)
    assert exact == {"stack_tx_ps": 100_000 + 1518 * 50, "nic_tx_ps": 300_000 + -(-1518 * 138_900 // 1000),
                     "nic_rx_ps": 250_000 + -(-1518 * 138_900 // 1000), "irq_wait_ps": 0,
                     "stack_rx_ps": 150_000 + 1518 * 50}
    assert detail["stack_tx_syscall_ps"] == 0 and detail["stack_rx_irq_cost_ps"] == 0


def test_socket_throughput_is_the_bottleneck_of_wire_and_cores_within_one_percent(core):
    """UDP streaming per message size, both fabrics, bypass and kernel stacks: MB/s = min(wire goodput,
    message / CPU time per message on the sending and receiving cores) within 1 % where one limit
    dominates (the next is 5 % or more away); TCP series are reported beside them."""
    out = rfc2544(TOLLY, tests=["socket"], frame_sizes=[64, 256, 1518, 9216], pairs=PAIRS,
                  stacks=["scenario", "linux-kernel", "linux-kernel:tcp"], settings=TRIAL)["socket"]
    udp = out.filter(out["stack"] != "linux-kernel tcp")
    checked = 0
    for row in udp.iter_rows(named=True):
        bounds = sorted(row[f"{k}_MBps"] for k in ("wire", "tx_core", "rx_core", "dma"))
        if bounds[1] >= 1.05 * bounds[0]:
            assert abs(row["error"]) < 0.01, row
            checked += 1
    assert checked >= 12
    limits = {(r["stack"], r["frame_bytes"]): r["limit"] for r in udp.iter_rows(named=True)}
    # Small datagrams are CPU-bound, jumbo frames wire-bound, on either stack.
    assert limits[("scenario udp", 64)] == "rx_core" and limits[("linux-kernel udp", 64)] == "rx_core"
    assert limits[("scenario udp", 9216)] == "wire"
    tcp = out.filter(out["stack"] == "linux-kernel tcp")
    assert tcp.height == 8 and (tcp["MBps"] > 0).all()


def test_device_tests_run_with_ideal_tester_ports_when_hosts_have_a_model(core):
    """RFC 1242 latency stays the device's: 500 ns through the fm4000-like switch, although the
    scenario's hosts run the host datapath model."""
    out = rfc2544(TOLLY, tests=["latency"], frame_sizes=[64, 1518], pairs=[("s0", "s1")],
                  settings=Settings(trial_ps=200_000_000, latency_rate=0.5))["latency"]
    assert out["latency_ps"].to_list() == [500_000.0, 500_000.0]
    assert (out["queueing_ps"] == 0).all()


def test_stacks_parse_and_refuse_unknown_names():
    assert parse_stack("linux-kernel:tcp") == Stack("linux-kernel tcp", "linux-kernel", "tcp")
    assert parse_stack("scenario") == Stack("scenario udp", None, "udp")
    with pytest.raises(ValueError, match="allowed: scenario, linux-kernel"):
        parse_stack("dpdk")
    with pytest.raises(ValueError, match="udp or tcp"):
        parse_stack("kernel-bypass:sctp")


def test_rfc2544_command_runs_host_latency_and_socket_with_stacks(core, tmp_path):
    args = [sys.executable, "-m", "fabricsim", "rfc2544", str(TOLLY), "--pair", "s0:s1", "--test", "host_latency",
            "--test", "socket", "--frame-size", "64", "--frame-size", "1518", "--trial", "200us",
            "--stack", "scenario", "--stack", "linux-kernel", "--messages", "3", "--out", str(tmp_path / "out")]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["plots", "rfc2544.html", "rfc2544_host_latency.parquet", "rfc2544_socket.parquet"]
    page = (tmp_path / "out" / "rfc2544.html").read_text()
    assert "Where the time goes" in page and "NIC tx DMA" in (tmp_path / "out" / "plots" /
                                                              "rfc2544_breakdown.svg").read_text()
    bad = subprocess.run([*args[:5], "--test", "socket", "--stack", "dpdk"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown host model 'dpdk'" in bad.stderr


def test_run_report_shows_where_a_ping_pongs_time_goes(core, tmp_path):
    """The run report's breakdown: per ping-pong flow, host components from host_latency plus the
    fabric's remainder, which equals the closed-form fabric part (no queues on an idle path)."""
    from fabricsim import run
    from fabricsim.experiments.path_latency import end_to_end, path_hops, path_nodes
    from fabricsim.outputs.report.run import latency_breakdown, write_report

    sc = from_dict({
        "name": "pp", "duration": "1ms",
        "network": {"host": {"latency": 0, "model": {"preset": "linux-kernel"}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate": "10Gbps", "delay": "5ns"}},
        "traffic": [{"kind": "ping_pong", "name": "pp", "src": "h0", "dst": "h1", "message_size": "100B",
                     "messages": 10}],
    })
    r = run(sc)
    b = latency_breakdown(r)
    assert b["name"].to_list() == ["pp", "pp"]
    resolved = sc.to_resolved()
    closed = end_to_end(resolved, path_hops(resolved, r.links, path_nodes(r.links, "h0", "h1")), 146)
    fabric = sum(v for k, v in closed.parts.items() if k not in HOST_PARTS)
    assert b["fabric_ps"].to_list() == [float(fabric)] * 2
    assert b["latency_mean_ps"].to_list() == [float(closed.total_ps)] * 2
    page = write_report(r, tmp_path / "report.html")
    assert "Where the time goes" in page.read_text()


def test_end_to_end_tests_need_a_host_model_or_a_stack(core):
    sc = from_dict({"duration": "1ms", "topology": {"kind": "star", "hosts": 2, "link": {"rate": "10Gbps", "delay": "5ns"}}})
    with pytest.raises(ValueError, match="network.host.model"):
        rfc2544(sc, tests=["host_latency"], frame_sizes=[64])
    # A preset stack needs nothing from the scenario's hosts.
    out = rfc2544(sc, tests=["host_latency"], frame_sizes=[64], stacks=["kernel-bypass"], settings=TRIAL)
    row = out["host_latency"].row(0, named=True)
    assert row["latency_ps"] == row["closed_form_ps"]
