"""Per-packet latency breakdown (``stats.packet_latency``): every traced packet's host components
against the closed form of the host model's parameters (path_latency.host_terms), the per-flow
``host_latency`` sums against the rows, determinism and configuration errors."""

import polars as pl
import pytest

from fabricsim import from_dict, run
from fabricsim.errors import ScenarioError
from fabricsim.experiments.path_latency import HOST_PARTS, end_to_end, host_terms, path_hops, path_nodes
from fabricsim.schema import load
from test_e2e_latency import TOLLY

COMPONENTS = ["tx_cpu_wait", "tx_cpu", "tx_dma", "rx_dma", "rx_irq_wait", "rx_cpu_wait", "rx_cpu"]
UDP_OVERHEAD = 46  # Ethernet 18 + IPv4 20 + UDP 8 bytes around a datagram's payload.


def _ping_pong(frame: int, messages: int, stats: dict | None = None) -> dict:
    doc = load(TOLLY).source_data
    doc["duration"] = "2ms"
    doc["traffic"] = [{"kind": "ping_pong", "name": "pp", "src": "s0", "dst": "s1",
                       "message_size": f"{frame - UDP_OVERHEAD}B", "messages": messages}]
    doc["stats"] = {**(doc.get("stats") or {}), "packet_latency": stats or {}}
    return doc


@pytest.mark.parametrize("frame", [64, 1518])
def test_every_traced_packet_of_an_unloaded_ping_pong_has_the_closed_form_host_components(core, frame):
    """Requests and replies alike: each host component equals the closed form to the picosecond, the
    waits for a busy core are 0, fabric_ps is the fabric's closed form, and the rows sum to the
    per-flow host_latency table exactly."""
    doc = _ping_pong(frame, 6)
    result = run(from_dict(doc))
    rows = result.packet_latency
    assert rows.height == 12  # 6 requests (flow 0) and 6 replies (flow 1)
    assert rows["flow_id"].value_counts().sort("flow_id")["count"].to_list() == [6, 6]
    assert result.summary["packet_latency_missed"] == 0
    assert set(rows["kind"].to_list()) == {"udp"}
    resolved = from_dict(doc).to_resolved()
    exact, _ = host_terms(resolved["network"]["host"]["model"], frame)
    for row in rows.iter_rows(named=True):
        hops = path_hops(resolved, result.links, path_nodes(result.links, row["src"], row["dst"]))
        closed = end_to_end(resolved, hops, frame).parts
        for part, component in HOST_PARTS.items():
            assert row[f"{component}_ps"] == exact[part], (component, row)
        assert row["tx_cpu_wait_ps"] == row["rx_cpu_wait_ps"] == 0
        fabric = sum(ps for part, ps in closed.items() if part not in HOST_PARTS)
        assert row["fabric_ps"] == fabric, (closed, row)
        total = sum(row[f"{c}_ps"] for c in COMPONENTS) + row["fabric_ps"]
        assert row["delivered_ps"] - row["created_ps"] == total
    for flow in (0, 1):
        mine = rows.filter(pl.col("flow_id") == flow)
        sums = mine.select([pl.col(f"{c}_ps").sum().alias(c) for c in COMPONENTS]).row(0, named=True)
        lat = result.host_latency.filter(pl.col("flow_id") == flow)
        by = dict(zip(lat["component"].cast(pl.Utf8).to_list(), lat["total_ps"].to_list()))
        assert sorted(by) == sorted(COMPONENTS)
        for c in COMPONENTS:
            assert by[c] == sums[c], (flow, c)
        assert set(lat["packets"].to_list()) == {6}


def test_per_packet_rows_are_identical_across_runs_with_the_same_seed(core):
    doc = _ping_pong(512, 5)
    a, b = run(from_dict(doc)).packet_latency, run(from_dict(doc)).packet_latency
    assert a.height == 10 and a.equals(b)


def test_max_packets_caps_the_rows_and_counts_the_rest_as_missed(core):
    result = run(from_dict(_ping_pong(256, 5, {"max_packets": 3})))
    assert result.packet_latency.height == 3
    assert result.summary["packet_latency_missed"] == 7
    # The first three deliveries, in time order.
    assert result.packet_latency["delivered_ps"].is_sorted()


def test_flows_filter_keeps_only_the_named_traffic_entries(core):
    doc = _ping_pong(256, 4, {"flows": ["pp"]})
    doc["traffic"].append({"kind": "udp_cbr", "name": "bg", "src": "s2", "dst": "s3", "rate": "1Gbps",
                           "frame_size": "512B", "stop": "100us"})
    result = run(from_dict(doc))
    assert result.packet_latency.height == 8
    assert set(result.packet_latency["flow_id"].to_list()) == {0, 1}
    assert result.flows.height == 3
    assert result.flows.filter(pl.col("name") == "bg")["packets_delivered"].item() > 0


def test_off_by_default_there_is_no_packet_latency_table(core):
    doc = _ping_pong(256, 2)
    del doc["stats"]["packet_latency"]
    result = run(from_dict(doc))
    assert "packet_latency" not in result.tables() and "packet_latency_missed" not in result.summary


def test_unknown_flow_names_and_bad_sizes_are_refused_with_their_field_path(core):
    with pytest.raises(ScenarioError, match=r"stats.packet_latency.flows\[0\].*unknown traffic entry 'nope'.*pp"):
        run(from_dict(_ping_pong(256, 2, {"flows": ["nope"]})))
    with pytest.raises(ScenarioError, match="max_packets"):
        from_dict(_ping_pong(256, 2, {"max_packets": 0}))


def _loaded() -> dict:
    """Two TCP streams and a UDP stream into one host, every packet traced."""
    doc = _ping_pong(256, 1, {"max_packets": 1_000_000})
    doc["duration"] = "300us"
    doc["traffic"] = [
        {"kind": "tcp_bulk", "name": "bulk", "src": ["s0", "s2"], "dst": "s1", "size": "300KB"},
        {"kind": "udp_cbr", "name": "udp", "src": "s3", "dst": "s1", "rate": "2Gbps", "frame_size": "1518B",
         "stop": "100us"},
    ]
    return doc


def test_under_load_the_rows_add_up_to_the_per_flow_host_latency_exactly(core):
    """Two TCP streams and a UDP stream into one host (queues at cores, GSO/GRO batches, waits): with
    room for every packet, each flow's rows sum to its host_latency totals, component by component,
    and every row's parts add up to its one-way time."""
    result = run(from_dict(_loaded()))
    rows = result.packet_latency
    assert result.summary["packet_latency_missed"] == 0
    assert rows.height == int(result.flows["packets_delivered"].sum())
    assert {"data", "ack", "udp"} <= set(rows["kind"].to_list())
    parts = sum(pl.col(f"{c}_ps") for c in COMPONENTS) + pl.col("fabric_ps")
    assert (rows["delivered_ps"] - rows["created_ps"] == rows.select(parts).to_series()).all()
    waited = rows.select(pl.col("tx_cpu_wait_ps").sum() + pl.col("rx_cpu_wait_ps").sum()).item()
    assert waited > 0
    sums = rows.group_by("flow_id").agg([pl.col(f"{c}_ps").sum().alias(c) for c in COMPONENTS])
    lat = result.host_latency
    for row in sums.iter_rows(named=True):
        mine = lat.filter(pl.col("flow_id") == row["flow_id"])
        by = dict(zip(mine["component"].cast(pl.Utf8).to_list(), mine["total_ps"].to_list()))
        for c in COMPONENTS:
            assert by.get(c, 0) == row[c], (row["flow_id"], c)
    assert sorted(sums["flow_id"].to_list()) == sorted(set(lat["flow_id"].to_list()))


def test_run_report_splits_a_tcp_flows_data_from_its_acks_per_packet(core, tmp_path):
    from fabricsim.outputs.report.run import packet_latency_breakdown, write_report

    result = run(from_dict(_loaded()))
    b = packet_latency_breakdown(result)
    assert int(b["packets"].sum()) == result.packet_latency.height
    bulk = b.filter(pl.col("name") == "bulk")
    # Data goes to s1, ACKs come back from it; the SYN (no payload) is an "ack" row towards s1.
    data = bulk.filter(pl.col("kind") == "data")
    assert sorted(data["src"].to_list()) == ["s0", "s2"] and set(data["dst"].to_list()) == {"s1"}
    acks = bulk.filter((pl.col("kind") == "ack") & (pl.col("src") == "s1"))
    assert acks.height == 2 and (acks["packets"] > 10).all()
    assert bulk.filter((pl.col("kind") == "ack") & (pl.col("dst") == "s1"))["packets"].to_list() == [1, 1]
    assert ((b["p50_ps"] <= b["p99_ps"]) & (b["p99_ps"] <= b["max_ps"])).all()
    page = write_report(result, tmp_path / "report.html").read_text()
    assert "Where the time goes, per packet" in page
