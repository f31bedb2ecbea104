"""Packet captures (``stats.pcap``): the files tshark reads carry the simulated
headers, and its TCP analysis agrees with the simulation's own counters."""

import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

import fabricsim
from fabricsim import ScenarioError, loads

ROOT = Path(__file__).resolve().parents[2]
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")

TCP = """
name: pcap-tcp
seed: 3
duration: 20ms
network:
  switch: {latency: 500ns, buffer: {model: static, port_size: 60KB}}
topology:
  kind: dumbbell
  left: 2
  right: 2
  edge_link: {rate: 40Gbps, delay: 2us}
  bottleneck_link: {rate: 10Gbps, delay: 5us}
tcp: {cc: newreno}
traffic:
  - {kind: tcp_bulk, name: f0, src: left0, dst: right0, size: 2MB}
  - {kind: tcp_bulk, name: f1, src: left1, dst: right1, size: 2MB}
stats:
  pcap:
    - {node: left0}
    - {node: right0, direction: rx, format: pcap, snaplen: 96}
"""

ROCE = """
name: pcap-roce
duration: 1ms
network:
  classes: 8
  switch:
    buffer: {model: shared, size: 4MB}
    ecn: {kmin: 20KB, kmax: 200KB, pmax: 0.2, classes: [3]}
    pfc: {classes: [3], xoff: 20KB, headroom: 200KB}
topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
roce: {ack_every: 4}
traffic:
  - {kind: rdma_write, src: [h1, h2, h3], dst: h0, messages: 4, message_size: 64KB, class: 3}
  - {kind: udp_cbr, src: h2, dst: h1, rate: 1Gbps, dscp: 46, ecn: true}
stats:
  pcap:
    - {node: sw0, port: 1, max_packets: 100000}
    - {node: sw0, port: 0, direction: tx, max_packets: 100000}
"""


def tshark(path, *fields, display_filter=None):
    """One dict per frame of ``path`` with the given tshark fields (strings)."""
    args = [TSHARK, "-r", str(path), "-T", "fields", "-E", "occurrence=f"]
    if display_filter:
        args += ["-Y", display_filter]
    for field in fields:
        args += ["-e", field]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [dict(zip(fields, line.split("\t"))) for line in out.splitlines()]


def ns(epoch: str) -> int:
    return int(Decimal(epoch) * 1_000_000_000)


@pytest.fixture(scope="module")
def tcp_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pcap-tcp")
    result = fabricsim.run(loads(TCP))
    result.write(out, report=False)
    return result, out


def test_capture_files_are_written_per_tap(tcp_run):
    result, out = tcp_run
    assert sorted(p.name for p in (out / "pcap").iterdir()) == ["left0.pcapng", "right0-rx.pcap"]
    taps = result.tables()["capture_taps"]
    assert taps["captured"].to_list() == [
        result.captures.filter(pl.col("tap") == i).height for i in range(2)
    ]
    assert taps["missed"].to_list() == [0, 0]
    # every port (no port number) and the direction by name, not the core's codes
    assert taps["port"].to_list() == [None, None] and taps["direction"].to_list() == ["both", "rx"]
    assert taps["snaplen"].to_list() == [256, 96]
    # The host's port carries every frame of its flow both ways.
    links = result.links
    tx = links.filter((pl.col("src") == "left0"))["packets"].item()
    rx = links.filter((pl.col("dst") == "left0"))["packets"].item()
    left0 = result.captures.filter(pl.col("tap") == 0)
    assert left0.filter(pl.col("direction") == 0).height == tx
    assert left0.filter(pl.col("direction") == 1).height == rx


def test_report_links_the_capture_files(tcp_run):
    from fabricsim.outputs.report.html import fmt_count
    from fabricsim.outputs.report.run import render_html

    result, out = tcp_run
    page = render_html(result)
    counts = result.tables()["capture_taps"]["captured"].to_list()
    for name, count in zip(("left0.pcapng", "right0-rx.pcap"), counts):
        assert (out / "pcap" / name).is_file()
        assert f'<a href="pcap/{name}">pcap/{name}</a>' in page
        assert f"{fmt_count(count)} frames" in page


@needs_tshark
def test_tshark_decodes_the_simulated_tcp_headers(tcp_run):
    result, out = tcp_run
    sacks = 0
    for tap, name, snaplen in ((0, "left0.pcapng", 256), (1, "right0-rx.pcap", 96)):
        rows = result.captures.filter(pl.col("tap") == tap).to_dicts()
        frames = tshark(
            out / "pcap" / name,
            "frame.time_epoch", "frame.len", "frame.cap_len", "ip.src", "ip.dst", "ip.dsfield.dscp",
            "ip.dsfield.ecn", "tcp.srcport", "tcp.dstport", "tcp.seq", "tcp.ack", "tcp.len", "tcp.flags",
            "tcp.window_size", "tcp.options.sack_le", "tcp.options.sack_re",
        )  # fmt: skip
        assert len(frames) == len(rows) > 1000
        for row, f in zip(rows, frames):
            assert ns(f["frame.time_epoch"]) == row["time_ps"] // 1000
            assert int(f["frame.len"]) == row["size"] - 4
            assert int(f["frame.cap_len"]) == min(row["size"] - 4, snaplen)
            assert int(f["ip.dsfield.dscp"]) == row["dscp"] and int(f["ip.dsfield.ecn"]) == row["ecn"]
            assert (int(f["tcp.srcport"]), int(f["tcp.dstport"])) == (row["sport"], row["dport"])
            assert int(f["tcp.flags"], 16) == row["tcp_flags"]
            assert int(f["tcp.len"]) == row["tcp_len"]
            syn = row["tcp_flags"] & 0x02
            # Relative numbers: the SYN takes sequence number 0, data starts at 1.
            assert int(f["tcp.seq"]) == (0 if syn else row["tcp_seq"] + 1)
            if row["tcp_flags"] & 0x10:
                assert int(f["tcp.ack"]) == (1 if syn else row["tcp_ack"] + 1)
            if not syn:
                assert int(f["tcp.window_size"]) == row["tcp_window"]
            if row["tcp_sack_blocks"] and row["size"] - 4 <= snaplen:
                sacks += 1
                assert int(f["tcp.options.sack_le"]) == row["tcp_sack0_start"] + 1
                assert int(f["tcp.options.sack_re"]) == row["tcp_sack0_end"] + 1
        hosts = {f["ip.src"] for f in frames} | {f["ip.dst"] for f in frames}
        assert hosts == {"10.0.0.1", "10.0.0.3"}
    assert sacks > 10, "SACK blocks were checked"


@needs_tshark
def test_tshark_tcp_analysis_agrees_with_the_simulation(tcp_run):
    result, out = tcp_run
    path = out / "pcap" / "left0.pcapng"
    rows = result.captures.filter(pl.col("tap") == 0).with_row_index("frame", offset=1)
    flow = result.flows.filter(pl.col("name") == "f0").row(0, named=True)
    assert flow["retransmits"] > 10, "the scenario must lose packets"
    # Every retransmission the sender made, and nothing else, is one to tshark
    # (which calls some of them fast retransmissions or out-of-order segments).
    flagged = tshark(
        path,
        "frame.number",
        display_filter="tcp.analysis.retransmission or tcp.analysis.fast_retransmission"
        " or tcp.analysis.out_of_order",
    )
    simulated = rows.filter(pl.col("retransmit"))["frame"].to_list()
    assert sorted(int(f["frame.number"]) for f in flagged) == simulated
    assert len(simulated) == flow["retransmits"]
    # Duplicate ACKs: pure ACKs arriving at the sender that repeat the last
    # acknowledgment while data is outstanding.
    acks = rows.filter((pl.col("direction") == 1) & (pl.col("tcp_len") == 0) & (pl.col("tcp_flags") & 0x02 == 0))
    sent = rows.filter(pl.col("direction") == 0)
    dup, last = 0, None
    high = dict(zip(sent["frame"], (sent["tcp_seq"] + sent["tcp_len"]).cum_max()))
    frames_sent = sent["frame"].to_list()
    for frame, ack in zip(acks["frame"], acks["tcp_ack"]):
        before = [f for f in frames_sent if f < frame]
        outstanding = before and high[before[-1]] > ack
        dup += int(ack == last and bool(outstanding))
        last = ack
    duplicates = tshark(path, "frame.number", display_filter="tcp.analysis.duplicate_ack")
    assert dup > 0 and len(duplicates) == dup
    # Frames per flow and direction: tshark's conversation equals the rows.
    per_port = tshark(path, "tcp.srcport")
    assert sum(1 for f in per_port if int(f["tcp.srcport"]) == rows["sport"][0]) == rows.filter(
        pl.col("direction") == 0
    ).height


@needs_tshark
def test_roce_pfc_and_ecn_are_decoded(tmp_path):
    result = fabricsim.run(loads(ROCE))
    result.write(tmp_path, report=False)
    assert result.summary["conservation_ok"]
    opcodes = {1: 0x06, 2: 0x07, 3: 0x08, 4: 0x0A, 5: 0x11, 6: 0x11, 7: 0x81}
    kinds = {"roce": 0, "pause": 0, "ce": 0, "udp": 0, "cnp": 0}
    for tap, name, peer in ((0, "sw0-p1.pcapng", "h1"), (1, "sw0-p0-tx.pcapng", "h0")):
        rows = result.captures.filter(pl.col("tap") == tap).to_dicts()
        frames = tshark(
            tmp_path / "pcap" / name,
            "frame.len", "frame.packet_flags_direction", "udp.dstport", "infiniband.bth.opcode", "infiniband.bth.psn",
            "infiniband.bth.destqp", "infiniband.aeth.msn", "ip.dsfield.ecn", "ip.dsfield.dscp", "macc.opcode",
            "macc.cbfc.enbv", "macc.cbfc.pause_time.c3", "frame.interface_name",
        )  # fmt: skip
        assert len(frames) == len(rows)
        for row, f in zip(rows, frames):
            assert int(f["frame.len"]) == row["size"] - 4
            assert f["frame.interface_name"] == f"sw0 port {1 - tap} -> {peer}"
            assert int(f["frame.packet_flags_direction"], 16) == (1 if row["direction"] == 1 else 2)
            if row["kind"] == 3:
                kinds["roce"] += 1
                assert int(f["udp.dstport"]) == 4791
                assert int(f["infiniband.bth.opcode"]) == opcodes[row["roce_op"]]
                assert int(f["infiniband.bth.psn"]) == row["roce_psn"] & 0xFFFFFF
                assert int(f["infiniband.bth.destqp"], 0) == row["roce_dst_qp"]
                if row["roce_op"] in (5, 6):
                    assert int(f["infiniband.aeth.msn"]) == row["roce_msn"]
                assert int(f["ip.dsfield.ecn"]) == row["ecn"]
                kinds["ce"] += row["ecn"] == 3
                kinds["cnp"] += row["roce_op"] == 7
            elif row["kind"] == 0:
                kinds["udp"] += 1
                assert int(f["ip.dsfield.dscp"]) == row["dscp"] == 46 and int(f["ip.dsfield.ecn"]) == row["ecn"] >= 2
            elif row["kind"] == 2:
                kinds["pause"] += 1
                assert int(f["macc.opcode"], 0) == 0x0101
                assert int(f["macc.cbfc.enbv"], 0) == 1 << 3
                assert int(f["macc.cbfc.pause_time.c3"]) == row["pause_quanta"]
    assert min(kinds.values()) > 0 and kinds["roce"] > 100 and kinds["udp"] > 10, kinds
    # The switch's PFC counters: XOFF and XON frames sent to h1 are the pauses captured.
    pauses = result.pauses.filter((pl.col("node") == "sw0") & (pl.col("port") == 1))
    sent = int(pauses["xoff_sent"].sum() + pauses["xon_sent"].sum())
    rows = result.captures.filter(pl.col("tap") == 0)
    assert sent == rows.filter((pl.col("kind") == 2) & (pl.col("direction") == 0)).height


@needs_tshark
def test_vxlan_frames_of_a_host_with_a_host_model(tmp_path):
    overrides = ["duration=300us", "stats.pcap=[{node: h1, direction: rx, max_packets: 500}]"]
    scenario = fabricsim.load(ROOT / "scenarios" / "pt-sdn.yaml", overrides)
    result = fabricsim.run(scenario)
    result.write(tmp_path, report=False)
    taps = result.tables()["capture_taps"]
    assert taps["captured"].item() == 500 and taps["missed"].item() > 0
    frames = tshark(tmp_path / "pcap" / "h1-rx.pcapng", "udp.dstport", "vxlan.vni", "tcp.seq", "tcp.len", "frame.len")
    rows = result.captures.to_dicts()
    assert len(frames) == 500
    for row, f in zip(rows, frames):
        assert row["encap"] == 50 and int(f["udp.dstport"]) == 4789 and int(f["vxlan.vni"]) == row["vni"] == 100
        assert int(f["frame.len"]) == row["size"] - 4
        if row["kind"] == 1:
            assert int(f["tcp.len"]) == row["tcp_len"]


def test_the_ip_ttl_is_the_frames_own(tcp_run):
    """left0's frames leave with a TTL of 64; after the dumbbell's two switches they come with 62. The written IPv4 header carries the captured TTL (and its checksum covers it)."""
    from fabricsim.outputs.pcap import _checksum, frames

    result, _ = tcp_run
    seen: dict[tuple[str, int], set[int]] = {}
    for row, frame in frames(result.captures):
        assert frame[22] == row["ttl"] and _checksum(frame[14:34]) == 0
        seen.setdefault((row["node"], row["direction"]), set()).add(frame[22])
    # left0 sends (0) with 64 and receives right0's ACKs (1) with 62; right0 receives the data with 62.
    assert seen == {("left0", 0): {64}, ("left0", 1): {62}, ("right0", 1): {62}}


def test_capturing_changes_nothing_else_and_is_deterministic(tmp_path):
    with_taps = fabricsim.run(loads(TCP))
    without = fabricsim.run(loads(TCP.split("stats:")[0]))
    assert "captures" not in without.tables() and "capture_taps" not in without.tables()
    assert with_taps.flows.equals(without.flows)
    assert with_taps.summary["events"] == without.summary["events"]
    with_taps.write(tmp_path / "a", report=False)
    fabricsim.run(loads(TCP)).write(tmp_path / "b", report=False)
    for name in ("left0.pcapng", "right0-rx.pcap"):
        assert (tmp_path / "a" / "pcap" / name).read_bytes() == (tmp_path / "b" / "pcap" / name).read_bytes()
    # A run written over a previous one replaces its captures.
    without.write(tmp_path / "a", report=False)
    assert not (tmp_path / "a" / "pcap").exists()


@pytest.mark.parametrize(
    "tap, field, needle",
    [
        ("{node: nowhere}", "stats.pcap[0].node", "unknown node"),
        ("{node: sw0, port: 9}", "stats.pcap[0].port", "ports 0..3"),
        ("{node: h1, direction: sideways}", "stats.pcap[0].direction", "tx"),
        ("{node: h1, max_packets: 0}", "stats.pcap[0].max_packets", ">= 1"),
        ("{node: h1, name: 'a/b'}", "stats.pcap[0].name", "file"),
    ],
)
def test_bad_taps_are_refused_at_their_field(tap, field, needle):
    text = f"""
duration: 100us
topology: {{kind: star, hosts: 4, link: {{rate: 10Gbps, delay: 1us}}}}
traffic: [{{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}}]
stats: {{pcap: [{tap}]}}
"""
    with pytest.raises(ScenarioError) as err:
        fabricsim.run(loads(text))
    assert field in str(err.value) and needle in str(err.value)


def test_two_taps_on_one_port_and_direction_are_refused():
    text = """
duration: 100us
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}]
stats: {pcap: [{node: sw0, direction: tx}, {node: sw0, port: 1, name: again}]}
"""
    with pytest.raises(ScenarioError, match=r"stats\.pcap\[1\]\.port.*already captured"):
        fabricsim.run(loads(text))
