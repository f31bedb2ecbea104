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


@pytest.mark.parametrize("per_byte", ["0.1389ns", "1.6ns"])
def test_a_cut_through_nic_overlaps_its_dma_with_the_wire_exactly_as_the_closed_form(core, per_byte):
    """A cut-through NIC (256 B chunks) on the kernel stack: every message's one-way latency and its
    DMA parts equal the closed form; with DMA faster than the 10G wire (0.1389 ns/B against 0.8 ns/B)
    each direction waits for one chunk only, whatever the frame, and with a slower one (1.6 ns/B) for
    what the transfer leaves over beyond the wire: T(n) - W(n - 256)."""
    doc = load(TOLLY).source_data
    nic = {"tx_latency": "300ns", "tx_per_byte": per_byte, "rx_latency": "250ns", "rx_per_byte": per_byte}
    doc["network"]["host"]["model"] = {"preset": "linux-kernel", "nic": {**nic, "cut_through": "256B"}}
    out = rfc2544(from_dict(doc), tests=["host_latency"], frame_sizes=[64, 1518, 9216], pairs=[("s0", "s1")],
                  settings=TRIAL)["host_latency"]
    fs = {"0.1389ns": 138_900, "1.6ns": 1_600_000}[per_byte]
    for row in out.iter_rows(named=True):
        n = row["frame_bytes"]
        assert row["latency_ps"] == row["closed_form_ps"], row
        assert row["sim_nic_tx_ps"] == row["nic_tx_ps"] and row["sim_nic_rx_ps"] == row["nic_rx_ps"], row
        whole = -(-n * fs // 1000)
        if n <= 256:
            lead = whole
        elif fs < 800_000:
            lead = -(-256 * fs // 1000)
        else:
            lead = whole - (n - 256) * 800
        assert (row["nic_tx_ps"], row["nic_rx_ps"]) == (300_000 + lead, 250_000 + lead), row
    # Store-and-forward on the same NIC pays the whole transfer at both ends.
    doc["network"]["host"]["model"]["nic"] = nic
    sf = rfc2544(from_dict(doc), tests=["host_latency"], frame_sizes=[9216], pairs=[("s0", "s1")],
                 settings=TRIAL)["host_latency"].row(0, named=True)
    ct = out.filter(out["frame_bytes"] == 9216).row(0, named=True)
    assert sf["latency_ps"] == sf["closed_form_ps"]
    assert sf["latency_ps"] - ct["latency_ps"] == 2 * (-(-9216 * fs // 1000)) - (ct["nic_tx_ps"] - 300_000) - (
        ct["nic_rx_ps"] - 250_000)


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


def _tcp_pp(model: str, size: int, messages: int, gap: str = "0s") -> dict:
    return {
        "duration": "20ms",
        "network": {"host": {"model": {"preset": model}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate": "10Gbps", "delay": "5ns"}},
        "traffic": [{"kind": "ping_pong", "name": "rr", "src": "h0", "dst": "h1", "protocol": "tcp",
                     "message_size": f"{size}B", "messages": messages, "gap": gap}],
    }


def test_tcp_ping_pong_replies_carry_the_acks_one_segment_each_way_per_message(core):
    """TCP_RR-like: after the first exchange (quick-ACKed) every reply carries its request's ACK and
    every request the previous reply's: data segments only, no 40 ms delayed-ACK stalls."""
    from fabricsim import run

    r = run(from_dict(_tcp_pp("linux-kernel", 100, 30)))
    t = r.ping_pong
    assert t["protocol"].cast(str).to_list() == ["tcp"] and t["messages"][0] == 30 and t["lost"][0] == 0
    # Per flow: SYN, SYN-ACK, 30 data segments, the first message's quick ACK, and for the reply
    # direction the last reply's delayed ACK (nothing follows to carry it).
    assert r.flows["packets_sent"].to_list() == [2 + 30 + 1, 2 + 30 + 2]
    assert t["latency_max_ps"][0] < 100e6  # no delayed-ACK wait in any round trip
    assert r.summary["conservation_ok"]


def test_unloaded_tcp_ping_pong_equals_the_closed_form_with_the_tcp_stage(core):
    """Every message after the first two (whose request or reply queues behind a quick ACK: the
    receivers are not yet in ping-pong mode) takes exactly the
    closed form: the UDP terms with the tcp stage instead of the udp one, on the segment's frame."""
    from fabricsim import run
    from fabricsim.experiments.path_latency import end_to_end, path_hops, path_nodes

    for model in ("linux-kernel", "kernel-bypass"):
        sc = from_dict(_tcp_pp(model, 100, 10))
        r = run(sc)
        resolved = sc.to_resolved()
        frame = 100 + resolved["tcp"]["header_bytes"] + resolved["tcp"]["l2_bytes"]
        closed = end_to_end(resolved, path_hops(resolved, r.links, path_nodes(r.links, "h0", "h1")), frame, "tcp")
        t = r.ping_pong
        assert t["latency_min_ps"][0] == closed.total_ps and t["latency_p50_ps"][0] == closed.total_ps
        assert t["latency_max_ps"][0] > closed.total_ps and t["latency_p90_ps"][0] == t["latency_max_ps"][0]
        udp = end_to_end(resolved, path_hops(resolved, r.links, path_nodes(r.links, "h0", "h1")), frame, "udp")
        # linux-kernel's tcp and udp stages cost the same; kernel-bypass's TCP stack costs more.
        assert closed.total_ps == udp.total_ps if model == "linux-kernel" else closed.total_ps > udp.total_ps


def test_rfc2544_host_latency_runs_tcp_stacks_exactly_and_skips_frames_that_are_not_one_segment(core):
    sc = from_dict({"duration": "1ms", "topology": {"kind": "star", "hosts": 2, "link": {"rate": "10Gbps", "delay": "5ns"}}})
    out = rfc2544(sc, tests=["host_latency"], frame_sizes=[64, 256, 1518, 9216], stacks=["linux-kernel:tcp"],
                  settings=TRIAL)
    t = out["host_latency"]
    assert t["frame_bytes"].to_list() == [256, 1518] and t["message_bytes"].to_list() == [186, 1448]
    assert t["latency_min_ps"].to_list() == [float(x) for x in t["closed_form_ps"]]
    assert out["skipped"]["frame_bytes"].to_list() == [64, 9216]


def test_a_large_tcp_message_takes_several_segments_and_a_zero_size_is_refused(core):
    from fabricsim import run

    r = run(from_dict(_tcp_pp("linux-kernel", 5000, 5)))
    assert r.ping_pong["messages"][0] == 5 and r.ping_pong["frame_bytes"][0] == 1518
    with pytest.raises(Exception, match="message_size"):
        run(from_dict(_tcp_pp("linux-kernel", 0, 5)))


def test_sack_acks_cost_an_ack_not_system_calls_and_a_long_tcp_socket_trial_keeps_its_rate(core):
    """A pure ACK carrying SACK blocks (they ride in its seq/len fields) is an ACK to the host model:
    no system call, the tcp stage's per_ack cost. Before, each was charged as data of len/message
    system calls, a multi-ms poll after a ring overflow, and a 50 ms socket trial fell to 2/3 of
    a 10 ms one."""
    import polars as pl

    from fabricsim import run
    from fabricsim.experiments import rfc2544 as R

    sc = load(TOLLY)
    out = {t: rfc2544(sc, tests=["socket"], frame_sizes=[1518], pairs=[("s0", "s1")], stacks=["linux-kernel:tcp"],
                      settings=Settings(trial_ps=t * 10**9))["socket"]["MBps"][0] for t in (10, 50)}
    assert out[50] == pytest.approx(out[10], rel=0.03)
    target = list(R.targets(sc, [None], [("s0", "s1")], ()))[0]
    host = R._Host(R._Bench(target, Settings(trial_ps=50 * 10**9)), parse_stack("linux-kernel:tcp"))
    app = {"kind": "iperf3", "name": "x", "src": "s0", "dst": "s1", "duration": "50ms", "omit": "10ms"}
    r = run(from_dict(host._doc(50 * 10**9, [app], 1472)))
    assert r.flows["rack_losses"][0] > 0, "the ring overflows once: the receiver sends SACK blocks"
    st = r.tables()["host_stages"].filter((pl.col("node").cast(str) == "s1") & (pl.col("direction") == "tx"))
    units = dict(zip(st["kind"].cast(str), st["units"]))
    busy = dict(zip(st["kind"].cast(str), st[st.columns[-1]]))
    assert units["syscall"] == 0 and units["tcp"] > 0
    per_ack = host.host["stages"][1]["tx"]["per_ack_ps"]
    assert busy["tcp"] == units["tcp"] * per_ack
