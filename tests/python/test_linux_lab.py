"""The real-Linux lab: parsers and topology checks (no root), and live runs in namespaces (root).

Live tests carry ``@pytest.mark.linux`` and skip without root or the tools;
the long measurements are ``@pytest.mark.slow`` too.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from fabricsim.validation import linux_datapath, linux_dumbbell
from fabricsim.validation.linux import (
    CONNTRACK_RULES,
    PREFIX,
    Egress,
    Iperf3Job,
    Lab,
    LabError,
    Topology,
    Transfer,
    congestion_control_allowed,
    link_addresses,
    parse_iperf3,
    parse_ip_link,
    parse_nstat,
    parse_sockperf,
    parse_tc_qdiscs,
    qdisc_available,
    sweep_stale,
    unavailable_reason,
)

FIXTURES = Path(__file__).resolve().parents[1] / "linux" / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def needs_lab(*tools: str) -> pytest.MarkDecorator:
    reason = unavailable_reason(tuple(tools) or ("ip", "tc", "ethtool", "iperf3", "sysctl", "ss", "nstat"))
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def lab_namespaces(prefix: str = PREFIX) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix + "-")]


# --------------------------------------------------------------------------- parsers (no root)


def test_iperf3_tcp_json_gives_each_stream_its_bytes_retransmits_and_rtt() -> None:
    summary = parse_iperf3(fixture("iperf3_tcp.json"))
    raw = json.loads(fixture("iperf3_tcp.json"))
    assert summary.protocol == "TCP" and summary.cc == "reno"
    assert len(summary.streams) == 2
    for stream, item in zip(summary.streams, raw["end"]["streams"]):
        assert stream["bytes_sent"] == item["sender"]["bytes"]
        assert stream["bytes_received"] == item["receiver"]["bytes"]
        assert stream["retransmits"] == item["sender"]["retransmits"]
        assert stream["min_rtt_us"] == item["sender"]["min_rtt"] > 0
        # -i 0.5 over 1 s: two intervals whose bytes add up to what the sender sent
        assert len(stream["intervals"]) == 2
        assert sum(i[2] for i in stream["intervals"]) == pytest.approx(stream["bytes_sent"], rel=0.02)
    assert sum(s["bytes_received"] for s in summary.streams) == raw["end"]["sum_received"]["bytes"]
    assert summary.sender_cpu_percent > 0 and summary.receiver_cpu_percent > 0


def test_iperf3_udp_json_counts_lost_datagrams_out_of_the_received_bytes() -> None:
    summary = parse_iperf3(fixture("iperf3_udp.json"))
    raw = json.loads(fixture("iperf3_udp.json"))
    (stream,) = summary.streams
    assert summary.protocol == "UDP"
    assert stream["lost_packets"] == raw["end"]["sum"]["lost_packets"]
    assert stream["bytes_received"] == raw["end"]["sum_received"]["bytes"]


def test_iperf3_error_and_garbage_raise_lab_errors() -> None:
    with pytest.raises(LabError, match="unable to connect"):
        parse_iperf3(json.dumps({"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server"}))
    with pytest.raises(LabError, match="no JSON"):
        parse_iperf3("iperf3: error")


def test_tc_json_gives_shaper_and_queue_counters() -> None:
    htb, bfifo = parse_tc_qdiscs(fixture("tc_qdisc.json"), node="r", dev="eth1")
    assert (htb.kind, htb.parent) == ("htb", "root")
    assert (bfifo.kind, bfifo.parent, bfifo.handle) == ("bfifo", "1:1", "10:")
    assert bfifo.drops > 0 and bfifo.packets > 0 and bfifo.node == "r"
    delta = bfifo.minus(bfifo)
    assert (delta.drops, delta.packets, delta.bytes) == (0, 0, 0)


def test_ip_link_json_gives_counters_per_interface() -> None:
    links = parse_ip_link(fixture("ip_link.json"))
    assert {"lo", "eth0", "eth1"} <= set(links)
    assert links["eth1"].tx_packets > 0 and links["eth1"].mtu == 1500
    assert links["eth1"].minus(links["eth1"]).tx_bytes == 0


def test_nstat_json_gives_tcp_extension_counters() -> None:
    counters = parse_nstat(fixture("nstat.json"))
    assert counters["TcpRetransSegs"] > 0
    assert "TcpExtTCPSackRecovery" in counters and "TcpExtTCPLossProbes" in counters


def test_sockperf_summary_gives_one_way_latency_percentiles() -> None:
    record = parse_sockperf(fixture("sockperf_pingpong.txt"), message_bytes=64)
    assert record.observations > 1000
    assert 0 < record.min_us <= record.percentiles_us["p50"] <= record.percentiles_us["p99"] <= record.max_us
    assert record.avg_us > 0 and record.dropped == 0
    with pytest.raises(LabError):
        parse_sockperf("sockperf: error")


# --------------------------------------------------------------------------- topology descriptions (no root)


def test_topology_from_dict_reads_rates_queues_and_mtus() -> None:
    topo = Topology.from_dict(
        {
            "hosts": ["a", "b"],
            "routers": ["r"],
            "links": [
                {"a": "a", "b": "r", "mtu": 9000},
                {"a": "r", "b": "b", "egress": {"r": {"rate": "1Gbps", "shaper": "tbf", "queue": "pfifo", "limit": 100}}},
            ],
        }
    )
    assert topo.nodes == ("a", "b", "r")
    assert topo.links[0].mtu == 9000
    assert topo.links[1].egress["r"] == Egress(rate_bps=10**9, shaper="tbf", queue="pfifo", limit=100)
    assert link_addresses(1) == ("198.18.1.0/24", "198.18.1.1", "198.18.1.2")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"links": [{"a": "a", "b": "x"}]}, r"links\[0\]\.b: unknown value 'x'"),
        ({"links": [{"a": "a", "b": "b", "egress": {"a": {"rate": "fast"}}}]}, r"links\[0\]\.egress\.a\.rate"),
        ({"links": [{"a": "a", "b": "b", "egress": {"a": {"queue": "codel", "limit": 5}}}]}, r"queue: unknown value"),
        ({"links": [{"a": "a", "b": "b", "egress": {"a": {"queue": "bfifo"}}}]}, r"egress\.a\.limit: required"),
        ({"links": [{"a": "a", "b": "b", "egress": {"a": {"queue": "pfifo", "limit": "1MB"}}}]}, "packets"),
        ({"links": [{"a": "a", "b": "b", "mtu": 40}]}, r"links\[0\]\.mtu: must be in 68\.\.65535"),
        ({"links": [{"a": "a", "b": "b", "speed": 1}]}, r"links\[0\]\.speed: unknown key"),
        ({"links": [{"a": "a", "b": "b", "mtu": 100}], "tunnels": [{"a": "a", "b": "b"}]}, r"tunnels\[0\]\.mtu"),
        ({"links": []}, "not connected"),
        ({"links": [{"a": "a", "b": "b"}], "steering": "rss"}, "steering: unknown value"),
        ({"hosts": ["A"], "links": []}, r"hosts\[0\]"),
    ],
)
def test_bad_topologies_are_refused_naming_the_field(change: dict, message: str) -> None:
    data = {"hosts": ["a", "b"], **change}
    with pytest.raises(LabError, match=message):
        Topology.from_dict(data)


def test_conntrack_rules_track_inner_flows_and_exempt_the_vxlan_underlay() -> None:
    assert "udp dport 4789 notrack" in CONNTRACK_RULES
    assert "ct state established,related accept" in CONNTRACK_RULES
    assert "ct state new accept" in CONNTRACK_RULES


def test_iperf3_job_command_line() -> None:
    tcp = Iperf3Job("a", "b", cc="reno", streams=4, duration_s=20, cpu=1).argv("198.18.1.2", 5202)
    assert tcp[:3] == ["taskset", "-c", "1"]
    assert "-C" in tcp and tcp[tcp.index("-C") + 1] == "reno"
    assert tcp[tcp.index("-P") + 1] == "4" and tcp[tcp.index("-t") + 1] == "20"
    udp = Iperf3Job("a", "b", udp_rate_bps=5 * 10**8, bytes=10**6).argv("198.18.1.2", 5201)
    assert "-u" in udp and "-C" not in udp and udp[udp.index("-n") + 1] == "1000000"


# --------------------------------------------------------------------------- the dumbbell twin (no root)


def test_dumbbell_scenario_mirrors_the_linux_topology() -> None:
    import fabricsim

    setup = linux_dumbbell.DumbbellSetup(senders=3, cc="reno", buffer="250KB", rate="1Gbps")
    data = linux_dumbbell.scenario(setup, one_way_latency_us=10.0)
    scenario = fabricsim.from_dict(data)
    resolved = scenario.to_resolved()
    assert data["network"]["switch"]["buffer"] == {"model": "static", "port_size": "250KB"}
    links = data["topology"]["links"]
    assert [link["rate"] for link in links] == ["10Gbps"] * 3 + ["1Gbps"]
    assert all(link["delay"] == "5000ns" for link in links)
    assert data["tcp"]["cc"] == "newreno" and data["tcp"]["l2_header"] == "14B"
    assert resolved["traffic"]


def test_linux_topology_of_the_dumbbell_has_one_shaped_queue() -> None:
    topo = linux_dumbbell.topology(linux_dumbbell.DumbbellSetup(senders=4))
    shaped = [(link, egress) for link in topo.links for egress in link.egress.items()]
    assert len(shaped) == 1
    link, (node, egress) = shaped[0]
    assert (link.a, link.b, node) == ("r", "rx", "r")
    assert egress == Egress(rate_bps=10**9, shaper="htb", queue="bfifo", limit=250_000)
    assert topo.hosts == ("s0", "s1", "s2", "s3", "rx")


def test_unpaced_dumbbell_makes_its_cc_every_namespace_default() -> None:
    """Sockets start with the namespace's default congestion control (iperf3
    sets `-C` only after connect): an unpaced dumbbell makes that its own CC
    in every namespace, so no BBR init leaves them paced."""
    unpaced = linux_dumbbell.DumbbellSetup(senders=2, cc="cubic", rate="700Mbps", buffer="175KB", unpaced=True)
    assert unpaced.name == "cubic-2x1-700Mbps-175KB-20s-unpaced"
    assert linux_dumbbell.topology(unpaced).sysctls["net.ipv4.tcp_congestion_control"] == "cubic"
    reno = linux_dumbbell.DumbbellSetup(cc="reno", unpaced=True)
    assert linux_dumbbell.topology(reno).sysctls["net.ipv4.tcp_congestion_control"] == "reno"
    assert "net.ipv4.tcp_congestion_control" not in linux_dumbbell.topology(linux_dumbbell.DumbbellSetup()).sysctls
    # The recorded default then leaves the twin unpaced.
    record = {"environment": {"sysctls": {"net.ipv4.tcp_congestion_control": "cubic"}}}
    assert linux_dumbbell.recorded_tcp(record) == {}
    # The four dumbbells at a rate, with the bfifo holding 2 ms as 250 KB at 1 Gbps does.
    setups = linux_dumbbell.dumbbells("500Mbps", unpaced=True)
    assert [s.name for s in setups] == [
        f"{cc}-{n}x1-500Mbps-125KB-20s-unpaced" for cc in ("reno", "cubic") for n in (2, 4)
    ]
    assert linux_dumbbell.dumbbells("1Gbps")[0].buffer == "250KB"


def test_congestion_control_allowed_adds_the_name_for_the_block_and_restores_the_list(tmp_path: Path) -> None:
    allowed = tmp_path / "tcp_allowed_congestion_control"
    allowed.write_text("reno bbr\n")
    with congestion_control_allowed("cubic", allowed) as before:
        assert before == ["reno", "bbr"]
        assert allowed.read_text().split() == ["reno", "bbr", "cubic"]
    assert allowed.read_text() == "reno bbr\n"
    with pytest.raises(RuntimeError):
        with congestion_control_allowed("cubic", allowed):
            raise RuntimeError("a namespace refused it")
    assert allowed.read_text() == "reno bbr\n"
    # Already allowed, or no default asked for: the list is not written at all.
    os.utime(allowed, ns=(10**9, 10**9))
    with congestion_control_allowed("reno", allowed):
        pass
    with congestion_control_allowed(None, allowed):
        pass
    assert allowed.stat().st_mtime_ns == 10**9
    assert allowed.read_text() == "reno bbr\n"


def test_dumbbell_setup_refuses_unknown_congestion_control() -> None:
    with pytest.raises(LabError, match="cc: unknown value 'vegas'"):
        linux_dumbbell.DumbbellSetup(cc="vegas")


def test_recorded_dumbbell_results_have_every_reference_setup() -> None:
    experiments = {e["name"]: e for e in linux_dumbbell.recorded()}
    for setup in linux_dumbbell.REFERENCE_SETUPS:
        record = experiments[setup.name]
        assert record["environment"]["kernel"]
        assert len(record["runs"]) >= 3
        assert len(record["summary"]["flow_goodput_bps"]) == setup.flows
        assert record["setup"]["duration_s"] >= 10


def test_fabricsim_dumbbell_goodput_is_within_10_percent_of_linux(core: object) -> None:
    """fabricsim's defaults against the recorded Linux runs: total goodput and fairness only.

    Drops and retransmits differ by more (see docs/validation/linux.md); they
    are printed by `fabricsim validate linux` and tightened with the Linux TCP profile.
    """
    experiments = {e["name"]: e for e in linux_dumbbell.recorded()}
    for name in ("reno-2x1-1Gbps-250KB-20s", "cubic-4x1-1Gbps-250KB-20s"):
        record = experiments[name]
        sim = linux_dumbbell.simulate_recorded(record)
        linux_total = record["summary"]["total_goodput_bps"]["mean"]
        assert sim["conservation_ok"]
        assert sim["total_goodput_bps"] == pytest.approx(linux_total, rel=0.10), name
        assert sim["jain_index"] > 0.9


def test_fabricsim_dumbbell_with_jumbo_frames_against_the_kernel(core: object) -> None:
    """At MTU 9000 the lab is not CPU-bound (about 2 data segments per ACK):
    over the recorded 20 s runs (the lab twin as the lab ran: senders paced
    as the recorded ones were, the servers' measured reader; seed 1) the
    twin's total goodput is within 5 % of the kernel's and its drops within
    30 % on all four (0.99, 1.02, 1.10 and 1.08 of the kernel's), and the
    CUBIC twins enter recovery as often as the kernel's senders (1,623
    against 1,629 and 3,233 against 3,405 SACK recoveries). CUBIC runs as the
    lab's kernel does: time in 250 Hz jiffies and the increase held for HZ /
    32 jiffies while cwnd is unchanged. Paced with the ideal reader cubic-2x1
    loses 1.42 of the kernel's drops (unpaced 1.16); with the hold of min(HZ
    / 32, delay_min) unpaced cubic-2x1 lost 0.47, in exact time 0.33
    (docs/validation/linux.md).
    Before the receiver RTT was measured as Linux measures it (whole-ms
    timestamp samples and the time to receive a window), the flows kept their
    initial receive windows and the twin lost nothing on any of the four."""
    experiments = {e["name"]: e for e in linux_dumbbell.recorded()}
    names = [s.name for s in linux_dumbbell.REFERENCE_SETUPS if s.mtu == 9000]
    assert len(names) == 4
    for name in names:
        record = experiments[name]
        setup = linux_dumbbell.DumbbellSetup(**record["setup"])
        sim = linux_dumbbell.simulate_recorded(record)
        assert sim["conservation_ok"]
        assert sim["total_goodput_bps"] == pytest.approx(record["summary"]["total_goodput_bps"]["mean"], rel=0.05), name
        assert sim["drops"] == pytest.approx(record["summary"]["drops"]["mean"], rel=0.30), name
        if setup.cc == "cubic":
            recoveries = linux_dumbbell.kernel_recoveries(record)
            assert sim["recoveries"] == pytest.approx(recoveries, rel=0.10), name


def test_cubic_twin_with_the_kernels_hold_against_the_traced_jumbo_frame_runs(core: object) -> None:
    """The second recording (05:43 UTC, scheduler-traced), each CUBIC
    dumbbell at MTU 9000 against the lab twin (paced as the recorded senders
    were, the servers' measured reader; seed 1): drops within 30 % of the
    kernel's (1.04 and 1.02; unpaced 1.10 and 1.10, unpaced with the hold of
    min(HZ / 32, delay_min) 0.50 and 1.11) and SACK recoveries within 10 %
    (1,629 against 1,650 and 3,381 against 3,438; unpaced with the other hold
    1,998 and 5,110), because the twin's CUBIC holds its increase for HZ / 32
    jiffies as the lab kernel's code does (docs/validation/linux.md)."""
    path = linux_dumbbell.RESULTS.parent / "dumbbell-traced.json"
    experiments = {e["name"]: e for e in linux_dumbbell.recorded(path)}
    for name in ("cubic-2x1-1Gbps-250KB-20s-mtu9000", "cubic-4x1-1Gbps-250KB-20s-mtu9000"):
        record = experiments[name]
        sim = linux_dumbbell.simulate_recorded(record)
        linux_drops = linux_dumbbell.summary_drops(record)
        recoveries = linux_dumbbell.kernel_recoveries(record)
        assert sim["drops"] == pytest.approx(linux_drops, rel=0.30), name
        assert sim["recoveries"] == pytest.approx(recoveries, rel=0.10), name
        assert sim["total_goodput_bps"] == pytest.approx(record["summary"]["total_goodput_bps"]["mean"], rel=0.05), name


def test_cubic_twin_paced_as_the_lab_senders_were_moves_mtu_1500_towards_the_kernel(core: object) -> None:
    """The lab's senders ran Linux's internal pacing: the machine's default
    congestion control is BBR, whose init sets SK_PACING_NEEDED, and iperf3
    switches to CUBIC only after connect (read from the sockets with bpftrace,
    docs/validation/linux.md). The twin of a recording paces the same way
    (`pacing: internal`, from the recorded default); traced recording,
    measured reader, seed 1: at MTU 1500 CUBIC loses less than unpaced
    (`pacing: off`; cubic-2x1 1.59 against 2.18 of the kernel's drops,
    cubic-4x1 3.58 against 3.93; seeds 2-3: 0.71-0.76 and 0.86-0.88 of the
    unpaced drops) with fewer recoveries, and at MTU 9000 it
    stays within 30 % of the kernel's drops and 10 % of its recoveries (1.04
    and 1.02; 0.99 and 0.98)."""
    path = linux_dumbbell.RESULTS.parent / "dumbbell-traced.json"
    experiments = {e["name"]: e for e in linux_dumbbell.recorded(path)}
    for name in ("cubic-2x1-1Gbps-250KB-20s", "cubic-4x1-1Gbps-250KB-20s"):
        record = experiments[name]
        unpaced = linux_dumbbell.simulate_recorded(record, tcp={"pacing": "off"})
        paced = linux_dumbbell.simulate_recorded(record)
        linux_drops = linux_dumbbell.summary_drops(record)
        assert linux_drops < paced["drops"] < 0.95 * unpaced["drops"], name
        assert paced["recoveries"] < unpaced["recoveries"], name
        assert paced["total_goodput_bps"] == pytest.approx(record["summary"]["total_goodput_bps"]["mean"], rel=0.05), name
    for name in ("cubic-2x1-1Gbps-250KB-20s-mtu9000", "cubic-4x1-1Gbps-250KB-20s-mtu9000"):
        record = experiments[name]
        paced = linux_dumbbell.simulate_recorded(record)
        recoveries = linux_dumbbell.kernel_recoveries(record)
        assert paced["drops"] == pytest.approx(linux_dumbbell.summary_drops(record), rel=0.30), name
        assert paced["recoveries"] == pytest.approx(recoveries, rel=0.10), name


def test_the_twin_of_a_recording_paces_its_senders_when_the_lab_default_was_bbr() -> None:
    """BBR's init leaves a socket paced after iperf3 switches it to CUBIC or
    Reno; any other recorded default (or none) leaves the twin unpaced."""
    env = lambda cc: {"sysctls": {"net.ipv4.tcp_congestion_control": cc}}  # noqa: E731
    assert linux_dumbbell.recorded_pacing(env("bbr")) == "internal"
    assert linux_dumbbell.recorded_pacing(env("cubic")) is None
    assert linux_dumbbell.recorded_pacing(env("reno")) is None
    assert linux_dumbbell.recorded_pacing({}) is None
    record = {"environment": env("bbr")}
    assert linux_dumbbell.recorded_tcp(record) == {"pacing": "internal"}
    assert linux_dumbbell.recorded_tcp(record, {"pacing": "off", "cc": "cubic"}) == {"pacing": "off", "cc": "cubic"}
    assert linux_dumbbell.recorded_tcp({"environment": env("cubic")}, {"cc": "cubic"}) == {"cc": "cubic"}
    for path in (linux_dumbbell.RESULTS, linux_dumbbell.TRACED_RESULTS):
        for record in linux_dumbbell.recorded(path):
            assert linux_dumbbell.recorded_tcp(record)["pacing"] == "internal", record["name"]


def test_the_lab_machine_moves_mtu_1500_cubic_through_its_gso_setting_not_its_cpu_costs(core: object) -> None:
    """The hosts on the lab machine (host datapath model `linux-veth`, all
    namespaces on one 2-core machine) bring the traced cubic-4x1 at MTU 1500
    from 3.38 to 1.04 of the kernel's drops (seed 1), but through the
    preset's `gso: 0` (TCP sends no GSO bursts): with TCP's 64 KiB GSO
    buffers, which the lab's senders built, it loses 3.5x again (and without
    any CPU cost 1.0x), so the lab twin's default keeps ideal hosts
    (docs/validation/linux.md, "The lab twin as the lab ran"). With the
    measured reader on its host's core (the default on a modelled host
    since 2026-11-23; seed 1): default 3.58, machine 0.47, 64 KiB GSO 2.94
    (reader on its own timers: 0.91, 3.48)."""
    record = {e["name"]: e for e in linux_dumbbell.recorded(linux_dumbbell.TRACED_RESULTS)}["cubic-4x1-1Gbps-250KB-20s"]
    tcp, host = linux_dumbbell.lab_twin(record)
    assert tcp["pacing"] == "internal" and tcp["receiver_app"] and host is None
    assert "receiver_app" not in linux_dumbbell.lab_twin(record, reader=False)[0]
    tcp, host = linux_dumbbell.lab_twin(record, machine=True)
    assert host["model"]["preset"] == "linux-veth" and host["model"]["machines"] == [["s0", "s1", "s2", "s3", "rx"]]
    kernel = linux_dumbbell.summary_drops(record)
    default = linux_dumbbell.simulate_recorded(record)["drops"] / kernel
    machine = linux_dumbbell.simulate_recorded(record, machine=True)["drops"] / kernel
    gso = linux_dumbbell.simulate_recorded(record, host={"model": {**host["model"], "gso": "64KiB"}})["drops"] / kernel
    assert default > 2.5 and machine < 0.5 * default and gso > 0.8 * default, (default, machine, gso)
    # Records without the readers' counters are only paced.
    hystart = {e["name"]: e for e in linux_dumbbell.recorded()}["cubic-1x1-1Gbps-8MB-10s"]
    assert linux_dumbbell.lab_twin(hystart) == ({"pacing": "internal"}, None)


def test_unpaced_twin_against_the_unpaced_lab_at_500mbps_and_1gbps(core: object) -> None:
    """Unpaced senders (every namespace's default congestion control the
    experiment's own; recorded default reno/cubic, so the twin is unpaced)
    on a lab that kept up (no CPU-backlog drops, 1.0-1.4 CPUs of 2 busy).
    At 500 Mbps (bfifo 125 KB, 2 ms) the twin matches all four dumbbells:
    seed 1, drops 0.82-1.01 of the kernel's, recoveries 0.95-1.10. At 1 Gbps
    it misses the 30 % bar on three of four, and this pins the measured
    ratios (seed 1): CUBIC 1.46 (2x1) and 1.42 (4x1), Reno 0.66 and 0.55
    (1.28, 1.33, 0.58, 0.55 before RACK's RTT followed Linux's ACK order,
    ``tcp.rack_rtt_in_ack_order``; docs/validation/linux.md, "Unpaced senders
    on a lab that keeps up")."""
    experiments = {e["name"]: e for e in linux_dumbbell.recorded(linux_dumbbell.UNPACED_RESULTS)}
    assert len(experiments) == 8
    pinned = {"reno-2x1": 0.66, "reno-4x1": 0.55, "cubic-2x1": 1.46, "cubic-4x1": 1.42}
    for name, record in experiments.items():
        setup = linux_dumbbell.DumbbellSetup(**record["setup"])
        assert setup.unpaced and record["environment"]["sysctls"]["net.ipv4.tcp_congestion_control"] == setup.cc
        assert all(run["softnet_drops"] == 0 for run in record["runs"]) and len(record["runs"]) >= 3
        tcp, _ = linux_dumbbell.lab_twin(record)
        assert "pacing" not in tcp and "receiver_app" in tcp, name
        sim = linux_dumbbell.simulate_recorded(record)
        drops = sim["drops"] / linux_dumbbell.summary_drops(record)
        recoveries = sim["recoveries"] / linux_dumbbell.kernel_recoveries(record)
        assert sim["conservation_ok"], name
        assert sim["total_goodput_bps"] == pytest.approx(record["summary"]["total_goodput_bps"]["mean"], rel=0.02), name
        if setup.rate == "500Mbps":
            assert drops == pytest.approx(1.0, abs=0.30), (name, drops)
            assert recoveries == pytest.approx(1.0, abs=0.15), (name, recoveries)
        else:
            assert drops == pytest.approx(pinned[f"{setup.cc}-{setup.senders}x1"], abs=0.12), (name, drops)


def test_unpaced_twin_on_the_lab_machine_with_the_reader_on_its_core(core: object) -> None:
    """The unpaced recording's twin with its hosts on the lab machine
    (`linux-veth`, all namespaces on one 2-core machine, TCP's 64 KiB GSO
    bursts as the lab's senders built them) and the measured reader, which
    there runs on its host's core (seed 1): 1 Gbps drops 1.12 (reno-2x1),
    0.91 (reno-4x1), 1.20 (cubic-2x1), 1.45 (cubic-4x1) of the kernel's,
    against 0.67, 0.56, 1.41, 1.33 with the same reader on its own timers;
    500 Mbps 1.00-1.21; goodput within 0.5 %. The bottleneck still holds
    most of the round trip (docs/validation/linux.md, "The receiving
    application on the lab machine's cores")."""
    experiments = {e["name"]: e for e in linux_dumbbell.recorded(linux_dumbbell.UNPACED_RESULTS)}
    # Measured with RACK's RTT in Linux's ACK order (before: (0.91, 0.64), (0.84, 0.57), (0.93, 1.22), (1.37, 1.29)).
    pinned = {"reno-2x1": (1.12, 0.67), "reno-4x1": (0.91, 0.56), "cubic-2x1": (1.20, 1.41), "cubic-4x1": (1.45, 1.33)}
    for name, record in experiments.items():
        setup = linux_dumbbell.DumbbellSetup(**record["setup"])
        tcp, host = linux_dumbbell.lab_twin(record, machine=True)
        host = {"model": {**host["model"], "gso": "64KiB"}}
        kernel = linux_dumbbell.summary_drops(record)
        sim = linux_dumbbell.simulate_recorded(record, tcp=tcp, host=host)
        assert sim["conservation_ok"], name
        goodput = record["summary"]["total_goodput_bps"]["mean"]
        assert sim["total_goodput_bps"] == pytest.approx(goodput, rel=0.01), name
        if setup.rate == "500Mbps":
            measured = {"reno-2x1": 1.21, "reno-4x1": 1.12, "cubic-2x1": 1.00, "cubic-4x1": 1.10}
            assert sim["drops"] / kernel == pytest.approx(measured[f"{setup.cc}-{setup.senders}x1"], abs=0.08), name
            continue
        on_core, timers = pinned[f"{setup.cc}-{setup.senders}x1"]
        assert sim["drops"] / kernel == pytest.approx(on_core, abs=0.08), name
        off = {**tcp, "receiver_app": {**tcp["receiver_app"], "on_core": False}}
        timed = linux_dumbbell.simulate_recorded(record, tcp=off, host=host)["drops"] / kernel
        assert timed == pytest.approx(timers, abs=0.08), name


def test_the_lab_machine_with_64kib_gso_misses_the_bar_on_the_paced_mtu_1500_recordings(core: object) -> None:
    """Why `lab_twin()` keeps ideal hosts: over every recording (seeds 1-3),
    the lab machine with TCP's 64 KiB GSO and the reader on its core, with
    received packets on the application's core (`rx_steering: app`, the
    preset's) or spread by flow hash (`rss`, as the lab's RPS), leaves five of
    the 24 dumbbells outside 30 % of the kernel's drops, four of them paced MTU
    1500 ones, and the traced reno-2x1 more than 5 % short of the kernel's
    goodput (docs/validation/linux.md, "The lab machine as the twin's default,
    over every recording"). Seed 1 of the traced recording: cubic-4x1 2.94
    (app) and 3.13 (rss) of the kernel's drops (ideal hosts 3.58); reno-2x1
    0.932 and 0.927 of its goodput (ideal hosts 0.977)."""
    experiments = {e["name"]: e for e in linux_dumbbell.recorded(linux_dumbbell.TRACED_RESULTS)}
    cubic, reno = experiments["cubic-4x1-1Gbps-250KB-20s"], experiments["reno-2x1-1Gbps-250KB-20s"]
    hosts = linux_dumbbell.GRID_DIMENSIONS["host"]
    assert hosts["lab-machine-gso64k-rss"] == {"gso": "64KiB", "rx_steering": "rss"}
    default = linux_dumbbell.simulate_recorded(reno)["total_goodput_bps"] / reno["summary"]["total_goodput_bps"]["mean"]
    assert default == pytest.approx(0.977, abs=0.01)
    for name in ("lab-machine-gso64k", "lab-machine-gso64k-rss"):
        drops, goodput = [], []
        for record in (cubic, reno):
            host = linux_dumbbell.lab_host_model(linux_dumbbell.DumbbellSetup(**record["setup"]), **hosts[name])
            assert host["model"]["gso"] == "64KiB" and host["model"]["preset"] == "linux-veth"
            sim = linux_dumbbell.simulate_recorded(record, host=host)
            assert sim["conservation_ok"], (name, record["name"])
            drops.append(sim["drops"] / linux_dumbbell.summary_drops(record))
            goodput.append(sim["total_goodput_bps"] / record["summary"]["total_goodput_bps"]["mean"])
        assert drops[0] > 2.5, (name, drops)
        assert goodput[0] == pytest.approx(1.0, abs=0.01) and 0.90 < goodput[1] < 0.95, (name, goodput)


@pytest.mark.slow
def test_lab_twin_against_every_recorded_dumbbell_over_three_seeds(core: object) -> None:
    """Both recordings, the eight 20 s dumbbells each, seeds 1-3, the lab
    twin's default (paced as recorded, the measured reader): at MTU 9000
    drops within 30 % of the kernel's (0.99-1.10), goodput within 5 %
    everywhere; MTU 1500 CUBIC still loses more than the kernel (1.5-3.5x;
    docs/validation/linux.md). The unpaced recording: at 500 Mbps drops
    within 30 % (seed means 0.85-1.04); at 1 Gbps CUBIC 1.32 and 1.45, Reno
    0.63 and 0.62."""
    for path in (linux_dumbbell.RESULTS, linux_dumbbell.TRACED_RESULTS, linux_dumbbell.UNPACED_RESULTS):
        for record in linux_dumbbell.recorded(path):
            setup = linux_dumbbell.DumbbellSetup(**record["setup"])
            if setup.size or setup.senders < 2:
                continue
            sims = [linux_dumbbell.simulate_recorded(record, seed=seed) for seed in (1, 2, 3)]
            drops = sum(s["drops"] for s in sims) / 3 / linux_dumbbell.summary_drops(record)
            goodput = sum(s["total_goodput_bps"] for s in sims) / 3 / record["summary"]["total_goodput_bps"]["mean"]
            label = (path.name, record["name"], drops)
            assert all(s["conservation_ok"] for s in sims), label
            assert goodput == pytest.approx(1.0, abs=0.05), label
            if setup.unpaced:
                expected = 1.0 if setup.rate == "500Mbps" else {"reno": 0.63, "cubic": 1.37}[setup.cc]
                assert drops == pytest.approx(expected, abs=0.30 if setup.rate == "500Mbps" else 0.15), label
            elif setup.mtu == 9000:
                assert drops == pytest.approx(1.0, abs=0.30), label
            elif setup.cc == "cubic":
                assert 1.3 < drops < 4.0, label


def test_dumbbell_setup_names_say_a_non_default_mtu() -> None:
    assert linux_dumbbell.DumbbellSetup(senders=2).name == "cubic-2x1-1Gbps-250KB-20s"
    assert linux_dumbbell.DumbbellSetup(senders=2, mtu=9000).name == "cubic-2x1-1Gbps-250KB-20s-mtu9000"


def test_single_flow_twins_retransmit_only_what_the_bottleneck_dropped(core: object) -> None:
    """One flow into the 2 MB bfifo, as the kernel did (TcpRetransSegs =
    drops, no D-SACK): the twin's receiver compresses SACKs as Linux does and,
    like Linux's tcp_sack_new_ofo_skb, sends a withheld ACK before a SACK
    block that was never reported first or second falls down the list; when
    it forgot such blocks, the sender's RACK retransmitted data that had
    arrived (Reno 1,685 retransmissions for 1,231 drops; CUBIC on the lab
    machine 1,936 for 204, whose spurious retransmissions themselves
    overflowed the queue). Now Reno retransmits its 1,231 and CUBIC on the
    lab machine its 68 (kernel: 65; docs/validation/linux.md)."""
    experiments = {e["name"]: e for e in linux_dumbbell.recorded()}
    reno = linux_dumbbell.simulate_recorded(experiments["reno-1x1-1Gbps-2MB-10s"])
    assert reno["conservation_ok"]
    assert reno["drops"] > 0 and reno["retransmits"] == reno["drops"]
    cubic_record = experiments["cubic-1x1-1Gbps-2MB-10s"]
    cubic = linux_dumbbell.simulate_recorded(cubic_record, machine=True)
    assert cubic["conservation_ok"]
    assert cubic["drops"] > 0 and cubic["retransmits"] == cubic["drops"]
    assert cubic["drops"] == pytest.approx(linux_dumbbell.summary_drops(cubic_record), rel=0.30)


def test_hystart_slow_start_exit_on_a_large_buffer_loses_nothing_in_linux_and_in_fabricsim(core: object) -> None:
    """One CUBIC flow into an 8 MB bfifo: Linux's HyStart leaves slow start
    before the queue overflows (recorded runs: no drop, no retransmission),
    and so does fabricsim's."""
    record = {e["name"]: e for e in linux_dumbbell.recorded()}["cubic-1x1-1Gbps-8MB-10s"]
    for run in record["runs"]:
        assert run["bottleneck"]["drops"] == 0 and run["retransmits"] == 0
        exits = run["nstat_senders"]["TcpExtTCPHystartTrainDetect"] + run["nstat_senders"]["TcpExtTCPHystartDelayDetect"]
        assert exits == 1
    sim = linux_dumbbell.simulate_recorded(record)
    assert sim["conservation_ok"]
    assert sim["drops"] == 0 and sim["retransmits"] == 0 and sim["recoveries"] == 0


def test_segments_per_ack_uses_only_runs_with_receiver_counters() -> None:
    runs = [
        {"nstat_receiver": {"TcpInSegs": 2700, "TcpOutSegs": 100}},
        {"nstat_receiver": {"TcpInSegs": 300, "TcpOutSegs": 20}},
        {},  # recorded before the receiver's counters were kept
    ]
    assert linux_dumbbell.segments_per_ack(runs) == "25.0"
    assert linux_dumbbell.segments_per_ack([{}]) == "-"


# --------------------------------------------------------------------------- datapath fit (no root)


def test_datapath_fit_recovers_a_line_and_stage_costs_are_differences() -> None:
    def points(a: float, b: float) -> list[dict]:
        return [{"mtu": m, "inner_packet_bytes": m, "cpu_ns_per_packet": a + b * m} for m in (100, 500, 1500, 9000)]

    fits = {"veth": linux_datapath.fit(points(1000, 0.1)), "vxlan": linux_datapath.fit(points(2500, 0.12))}
    fits["vxlan+ct"] = linux_datapath.fit(points(3300, 0.12))
    assert fits["veth"]["a_ns"] == pytest.approx(1000) and fits["veth"]["b_ns_per_byte"] == pytest.approx(0.1)
    assert fits["veth"]["r2"] == pytest.approx(1.0)
    stages = linux_datapath.stage_costs(fits)
    assert stages["vxlan_encap_decap"]["per_packet_ns"] == pytest.approx(1500)
    assert stages["vxlan_encap_decap"]["per_byte_ns"] == pytest.approx(0.02)
    assert stages["conntrack"]["per_packet_ns"] == pytest.approx(800)


def test_vxlan_below_the_smallest_tcp_mtu_uses_the_smallest_that_works() -> None:
    assert linux_datapath.working_mtu("veth", 96) == (96, "")
    mtu, why = linux_datapath.working_mtu("vxlan", 96)
    assert mtu == 88 + 50 and "inner MTU of 46 B" in why


def test_recorded_datapath_costs_cover_every_stage_and_mtu() -> None:
    data = linux_datapath.load()
    assert data["environment"]["kernel"] and data["method"]
    for stage in ("stack_veth", "vxlan_encap_decap", "conntrack"):
        assert data["stages"][stage]["per_packet_ns"] > 0
    for config in linux_datapath.CONFIGS:
        for instances in (1, 4):
            mtus = sorted(p["requested_mtu"] for p in data["points"] if p["config"] == config and p["instances"] == instances)
            assert mtus == sorted(linux_datapath.MTUS)
            fit = data["fits"][f"{config}/x{instances}"]
            assert len(fit["residuals"]) == len(linux_datapath.MTUS)
    for point in data["points"]:
        assert point["goodput_bps"] > 0 and point["cpu_ns_per_packet"] > 0
        assert math.isclose(point["inner_packet_bytes"], point["payload_bytes_per_packet"] + 52)


# --------------------------------------------------------------------------- live runs (root)


@pytest.mark.linux
@needs_lab()
def test_tiny_topology_runs_iperf3_and_leaves_no_namespace() -> None:
    topo = Topology.from_dict(
        {
            "hosts": ["a", "b"],
            "routers": ["r"],
            "links": [
                {"a": "a", "b": "r"},
                {"a": "r", "b": "b", "egress": {"r": {"rate": "100Mbps", "queue": "bfifo", "limit": "50KB"}}},
            ],
        }
    )
    with Lab(topo) as lab:
        prefix = lab.prefix
        assert len(lab_namespaces(prefix)) == 3
        run = lab.iperf3([Iperf3Job("a", "b", cc="reno", duration_s=2, interval_s=0.5)])
        (flow,) = run.flows
        # a 100 Mbit/s shaper: goodput just under it (headers), never above
        assert 70e6 < flow.goodput_bps < 100e6
        queue = run.qdisc("r", "b")
        assert queue.kind == "bfifo" and queue.packets > 10_000
        assert queue.drops >= 0 and flow.retransmits >= 0
        assert run.links["b"]["eth0"].rx_packets >= queue.packets
        assert "TcpOutSegs" in run.nstat["a"]
        mtu = lab.run("a", ["cat", f"/sys/class/net/{lab.device('a', 'r')}/mtu"]).stdout.strip()
        assert mtu == "1500"
        offloads = lab.run("a", ["ethtool", "-k", lab.device("a", "r")]).stdout
        assert "tcp-segmentation-offload: off" in offloads and "generic-segmentation-offload: off" in offloads
        sized = lab.transfers([Transfer("a", "b", bytes=2_000_000, cc="cubic")])
        (transfer,) = sized.flows
        # every byte arrives, and 2 MB through 100 Mbit/s take at least 160 ms
        assert transfer.bytes_received == 2_000_000
        assert 0.16 < transfer.completion_s == sized.job_completion_s < 5
    assert lab_namespaces(prefix) == []


@pytest.mark.linux
@needs_lab("ip", "tc", "sysctl", "ethtool")
def test_a_host_nic_queue_holds_txqueuelen_packets_as_the_models_default() -> None:
    """``network.host.txqueuelen`` defaults to what a Linux NIC has: the device's
    txqueuelen (1000) is what a pfifo given no limit holds."""
    import fabricsim

    with Lab(Topology.from_dict({"hosts": ["a", "b"], "links": [{"a": "a", "b": "b"}]})) as lab:
        dev = lab.device("a", "b")
        link = lab.run("a", ["ip", "-o", "link", "show", "dev", dev]).stdout
        lab.run("a", ["tc", "qdisc", "replace", "dev", dev, "root", "pfifo"])
        qdisc = lab.run("a", ["tc", "qdisc", "show", "dev", dev]).stdout
    default = fabricsim.loads("duration: 1ms\ntopology: {kind: star, hosts: 2, link: {rate: 1Gbps, delay: 1us}}\n")
    assert f"qlen {default.network.host.txqueuelen}" in link, link
    assert f"limit {default.network.host.txqueuelen}p" in qdisc, qdisc


@pytest.mark.linux
@needs_lab("ip", "sysctl", "ethtool")
def test_namespaces_take_a_default_congestion_control_the_machine_restricts() -> None:
    """A namespace may make only an allowed congestion control its default;
    the lab allows the topology's one while it sets it up and restores the
    machine's list (read before and after); the namespaces keep the default."""
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
    before = allowed.read_text()
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    candidates = [cc for cc in ("cubic", "reno") if cc in available]
    cc = next((c for c in candidates if c not in before.split()), candidates[0])
    topo = Topology.from_dict(
        {"hosts": ["a", "b"], "links": [{"a": "a", "b": "b"}], "sysctls": {"net.ipv4.tcp_congestion_control": cc}}
    )
    with Lab(topo) as lab:
        for node in ("a", "b"):
            assert lab.run(node, ["sysctl", "-n", "net.ipv4.tcp_congestion_control"]).stdout.strip() == cc
        assert allowed.read_text() == before
    assert allowed.read_text() == before


@pytest.mark.linux
@needs_lab()
def test_a_failing_command_still_removes_the_namespaces() -> None:
    topo = Topology.from_dict({"hosts": ["a", "b"], "links": [{"a": "a", "b": "b"}]})
    lab = Lab(topo)
    with pytest.raises(LabError, match="false"):
        with lab:
            lab.run("a", ["false"])
    assert lab_namespaces(lab.prefix) == []


@pytest.mark.linux
@needs_lab()
def test_stale_namespaces_of_dead_labs_are_swept() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    name = f"{PREFIX}-{dead.pid}-dead-x"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert name in sweep_stale()
        assert name not in lab_namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    mine = f"{PREFIX}-{os.getpid()}-live-x"
    subprocess.run(["ip", "netns", "add", mine], check=True)
    try:
        assert mine not in sweep_stale()
    finally:
        subprocess.run(["ip", "netns", "del", mine], capture_output=True)


@pytest.mark.linux
@needs_lab("ip", "tc", "ethtool")
def test_a_queue_kind_missing_from_the_kernel_is_named() -> None:
    if qdisc_available("red"):
        pytest.skip("this kernel has red")
    topo = Topology.from_dict(
        {"hosts": ["a", "b"], "links": [{"a": "a", "b": "b", "egress": {"a": {"queue": "red", "limit": "100KB"}}}]}
    )
    lab = Lab(topo)
    with pytest.raises(LabError, match=r"links\[0\]\.egress\.a\.queue: this kernel has no 'red' qdisc"):
        lab.build()
    assert lab_namespaces(lab.prefix) == []


@pytest.mark.linux
@needs_lab("ip", "tc", "ethtool", "iperf3", "sysctl", "ss", "nstat", "nft", "conntrack")
def test_vxlan_tunnel_with_conntrack_carries_tcp_and_tracks_it() -> None:
    with Lab(linux_datapath.topology("vxlan+ct", 1500)) as lab:
        run = lab.iperf3([Iperf3Job("a", "b", cc="cubic", duration_s=1, tunnel=True)])
        assert run.flows[0].goodput_bps > 1e6
        underlay = run.links["a"][lab.device("a", "b")]
        tunnel = run.links["a"]["vx0"]
        # every tunnelled packet crossed the underlay with 50 B more
        assert underlay.tx_packets >= tunnel.tx_packets > 1000
        assert underlay.tx_bytes - tunnel.tx_bytes >= 50 * tunnel.tx_packets - 5000
        tracked = lab.run("b", ["conntrack", "-L", "-p", "tcp"]).stdout + lab.run("b", ["conntrack", "-L", "-p", "tcp"]).stderr
        assert "198.19.0.1" in tracked and "dport=5201" in tracked


@pytest.mark.linux
@needs_lab("ip", "tc", "ethtool", "iperf3", "sysctl", "ss", "nstat", "sockperf")
def test_sockperf_pingpong_measures_latency_between_namespaces() -> None:
    with Lab(Topology.from_dict({"hosts": ["a", "b"], "links": [{"a": "a", "b": "b"}]})) as lab:
        record = lab.sockperf_pingpong("a", "b", message_bytes=64, duration_s=1)
    assert record.observations > 100 and 0 < record.percentiles_us["p50"] < 10_000


@pytest.mark.linux
@pytest.mark.slow
@needs_lab("ip", "tc", "ethtool", "iperf3", "sysctl", "ss", "nstat", "sockperf")
def test_dumbbell_measurement_and_comparison(core: object) -> None:
    setup = linux_dumbbell.DumbbellSetup(senders=2, cc="cubic", duration_s=10)
    record = linux_dumbbell.measure(setup, repeats=1)
    assert len(record["runs"][0]["flows"]) == 2
    assert 0.8e9 < record["summary"]["total_goodput_bps"]["mean"] < 1e9
    rows = linux_dumbbell.compare(record)
    metrics = [row[0] for row in rows]
    assert {"Jain fairness index", "drops at the bottleneck", "mean bottleneck queue", "retransmits"} <= set(metrics)
    assert "loss episodes (recoveries)" in metrics
    receiver = record["runs"][0]["nstat_receiver"]
    assert receiver["TcpInSegs"] > receiver["TcpOutSegs"] > 0  # fewer ACKs than data segments
    assert lab_namespaces() == []


@pytest.mark.linux
@pytest.mark.slow
@needs_lab("ip", "tc", "ethtool", "iperf3", "sysctl", "ss", "nstat", "nft")
def test_datapath_stages_cost_cpu_in_order() -> None:
    costs = {
        config: linux_datapath.measure_point(config, 1500, 1, duration_s=3, repeats=1).cpu_ns_per_packet
        for config in ("veth", "vxlan", "vxlan+ct")
    }
    assert costs["veth"] < costs["vxlan"] < costs["vxlan+ct"]


# --------------------------------------------------------------------------- fabricsim validate linux


def test_validate_linux_recorded_prints_linux_and_fabricsim_side_by_side(core: object, capsys) -> None:
    from fabricsim.cli import main as cli

    assert cli.main(["validate", "linux", "--recorded", "reno-2x1-1Gbps-250KB-20s", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    metrics = [row[0] for row in report["rows"]]
    assert metrics[:2] == ["goodput flow 0 (s0)", "goodput flow 1 (s1)"]
    assert {"goodput total", "drops at the bottleneck", "retransmits"} <= set(metrics)
    assert report["environment"]["kernel"]
    assert cli.main(["validate", "linux", "--recorded", "100MB"]) == 0
    assert "job completion time" in capsys.readouterr().out


def test_validate_linux_without_root_says_what_is_missing(monkeypatch, capsys) -> None:
    from fabricsim.cli import main as cli
    from fabricsim.cli import validate_linux

    monkeypatch.setattr(validate_linux, "unavailable_reason", lambda tools: "the Linux lab needs root (network namespaces)")
    assert cli.main(["validate", "linux", "--senders", "2"]) == 2
    err = capsys.readouterr().err
    assert "needs root" in err and "--recorded" in err


def test_validate_linux_refuses_unknown_recorded_names_and_scenario_options(tmp_path: Path, capsys) -> None:
    from fabricsim.cli import main as cli

    assert cli.main(["validate", "linux", "--recorded", "no-such-experiment"]) == 2
    assert "no stored experiment matches" in capsys.readouterr().err
    scenario = tmp_path / "s.yaml"
    scenario.write_text("duration: 1ms\ntopology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}\n")
    # the lab's options belong to `validate linux`, a command of its own: the scenario check refuses them
    with pytest.raises(SystemExit) as exit_:
        cli.main(["validate", str(scenario), "--senders", "3"])
    assert exit_.value.code == 2 and "unrecognized arguments: --senders 3" in capsys.readouterr().err
    assert cli.main(["validate", str(scenario)]) == 0


def test_the_kernel_does_not_repeat_its_own_drops(core: object) -> None:
    """The eight unpaced dumbbells recorded twice on the same two-CPU lab
    with the same commands and sysctls (the machine replaced in between):
    the kernel's goodput repeats within 2 %, its drops do not (500 Mbps:
    1.57, 1.43, 0.80, 1.00 of the earlier recording; 1 Gbps: 1.46, 1.02,
    1.00, 0.51; SACK recoveries 0.33-0.92), with the readers further behind
    in the second (about twice the bytes per wake-up). The twin, given each
    recording's measured reader, is pinned against the second (seed 1)
    (docs/validation/linux.md, "Recorded again on the replaced lab machine")."""
    earlier = {e["name"]: e for e in linux_dumbbell.recorded(linux_dumbbell.UNPACED_RESULTS)}
    again = {e["name"]: e for e in linux_dumbbell.recorded(linux_dumbbell.UNPACED_AGAIN_RESULTS)}
    assert set(again) == set(earlier) and len(again) == 8
    # (kernel's drops, kernel's recoveries: second / first recording; twin / kernel, second, seed 1)
    pinned = {
        ("reno-2x1", "500Mbps"): (1.57, 0.85, 0.55),
        ("reno-4x1", "500Mbps"): (1.43, 0.84, 0.66),
        ("cubic-2x1", "500Mbps"): (0.80, 0.88, 1.24),
        ("cubic-4x1", "500Mbps"): (1.00, 0.92, 1.12),
        ("reno-2x1", "1Gbps"): (1.46, 0.75, 0.45),
        ("reno-4x1", "1Gbps"): (1.02, 0.51, 0.72),
        ("cubic-2x1", "1Gbps"): (1.00, 0.46, 0.98),
        ("cubic-4x1", "1Gbps"): (0.51, 0.33, 2.70),
    }
    beyond_the_bar = 0
    for name, record in again.items():
        before = earlier[name]
        assert record["setup"] == before["setup"], name
        sysctls = record["environment"]["sysctls"]
        for key, value in before["environment"]["sysctls"].items():
            if key.startswith("net.ipv4.tcp_"):
                assert sysctls[key] == value, (name, key)
        assert all(run["softnet_drops"] == 0 for run in record["runs"]) and len(record["runs"]) == 3
        goodput = record["summary"]["total_goodput_bps"]["mean"]
        assert goodput == pytest.approx(before["summary"]["total_goodput_bps"]["mean"], rel=0.02), name
        setup = linux_dumbbell.DumbbellSetup(**record["setup"])
        drops, recoveries, twin = pinned[(f"{setup.cc}-{setup.senders}x1", setup.rate)]
        kernel = linux_dumbbell.summary_drops(record)
        moved = kernel / linux_dumbbell.summary_drops(before)
        assert moved == pytest.approx(drops, abs=0.01), name
        ratio = linux_dumbbell.kernel_recoveries(record) / linux_dumbbell.kernel_recoveries(before)
        assert ratio == pytest.approx(recoveries, abs=0.01), name
        now, then = linux_dumbbell.reader_measurements(record), linux_dumbbell.reader_measurements(before)
        assert now is not None and then is not None
        assert now["bytes_per_wakeup"] > 1.2 * then["bytes_per_wakeup"], name
        beyond_the_bar += abs(moved - 1.0) > 0.30
        sim = linux_dumbbell.simulate_recorded(record)
        assert sim["conservation_ok"], name
        assert sim["total_goodput_bps"] == pytest.approx(goodput, rel=0.02), name
        assert sim["drops"] / kernel == pytest.approx(twin, abs=0.12), name
    assert beyond_the_bar == 4


def test_the_kernel_repeats_its_mtu_9000_drops(core: object) -> None:
    """The MTU 9000 dumbbells at 1 Gbps (six times fewer packets per second
    than MTU 1500, so the lab's CPUs keep up) recorded again 17 hours later
    on the replaced lab machine: the kernel's drops repeat within 1 % (and
    within 3 % of the traced recording), its recoveries within 3 %, and the
    twin's drops are pinned against the new recording (seed 1: Reno 2x1 and
    4x1 0.95 and 1.04, CUBIC 1.16 and 1.17; 1.06, 1.02, 1.15, 1.06 before
    RACK's RTT followed Linux's ACK order) (docs/validation/linux.md,
    "Recorded again on the replaced lab machine")."""
    earlier = {e["name"]: e for e in linux_dumbbell.recorded(linux_dumbbell.RESULTS)}
    again = linux_dumbbell.recorded(linux_dumbbell.MTU9000_AGAIN_RESULTS)
    assert len(again) == 4 and all("mtu9000" in e["name"] for e in again)
    for record in again:
        before = earlier[record["name"]]
        setup = linux_dumbbell.DumbbellSetup(**record["setup"])
        assert setup == linux_dumbbell.DumbbellSetup(**before["setup"]) and not setup.unpaced
        assert record["environment"]["kernel"] != before["environment"]["kernel"]
        kernel = linux_dumbbell.summary_drops(record)
        assert kernel / linux_dumbbell.summary_drops(before) == pytest.approx(1.0, abs=0.02), record["name"]
        ratio = linux_dumbbell.kernel_recoveries(record) / linux_dumbbell.kernel_recoveries(before)
        assert ratio == pytest.approx(1.0, abs=0.04), record["name"]
        sim = linux_dumbbell.simulate_recorded(record)
        assert sim["conservation_ok"], record["name"]
        measured = {"reno-2x1": 0.95, "reno-4x1": 1.04, "cubic-2x1": 1.16, "cubic-4x1": 1.17}
        assert sim["drops"] / kernel == pytest.approx(measured[f"{setup.cc}-{setup.senders}x1"], abs=0.05), record["name"]
        goodput = record["summary"]["total_goodput_bps"]["mean"]
        assert sim["total_goodput_bps"] == pytest.approx(goodput, rel=0.02), record["name"]


def test_building_a_lab_needs_only_the_tools_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lab without queues or firewalls is built with iproute2, sysctl and ethtool
    alone: a machine without iperf3 or tc skips (or runs) the tests by what they
    build, and the reason names only the tool that is missing."""
    plain = Lab(Topology.from_dict({"hosts": ["a", "b"], "links": [{"a": "a", "b": "b"}]}))
    assert plain.required_tools() == ("ip", "sysctl", "ethtool")
    queued = Lab(Topology.from_dict(
        {"hosts": ["a", "b"], "links": [{"a": "a", "b": "b", "egress": {"a": {"queue": "bfifo", "limit": "100KB"}}}]}))
    assert queued.required_tools() == ("ip", "sysctl", "ethtool", "tc")
    import fabricsim.validation.linux as linux

    monkeypatch.setattr(linux.os, "geteuid", lambda: 0)
    monkeypatch.setattr(linux.shutil, "which", lambda tool: None if tool in ("ethtool", "iperf3") else f"/bin/{tool}")
    assert unavailable_reason(plain.required_tools()) == "the Linux lab needs these tools: ethtool"
